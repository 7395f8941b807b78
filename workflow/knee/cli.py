"""knee's command line: one subcommand per workflow stage, usable by hand too (each declared in
its own module of knee.commands, beside its handler).

Exit codes: 0 success; 1 a failure with a message (bad input, engine died, no folder, ...);
2 a command or argument knee does not have; 3 the comparison is INVALID (the arms did not see
the same requests); 4 the audit found disagreements; 130 interrupted. `knee bar
--exit-verdict` exits with the bar's verdict: 0 PASS, 10 FAIL, 11 INCONCLUSIVE (cannot tell
yet: more pairs), 12 CONFOUNDED (the engine changed more than the variable), 3 INVALID.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

from knee.commands import registry
from knee.core.errors import KneeError

BOOTS = ("session", "pair")  # the commands that start an engine (and stop it when interrupted)


def parser() -> argparse.ArgumentParser:
    commands = registry.every()
    ap = argparse.ArgumentParser(prog="knee", description=__doc__,
                                 epilog=registry.listing(commands),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND",
                            help="one of the commands below (knee COMMAND --help)")
    for name, command in commands.items():
        p = sub.add_parser(name, description=command.details or command.what,
                           epilog=f"example:\n  {command.example}",
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        for flag, kw in command.arguments:
            p.add_argument(flag, **kw)
        p.set_defaults(fn=command.run)
    return ap


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["trace"] and "--" not in argv:  # `knee trace X -16.0%`: a number, no flag
        argv = [*argv[:-1], "--", argv[-1]] if argv[-1].startswith("-") and len(argv) > 2 \
            else argv
    if argv and not argv[0].startswith("-") and argv[0] not in registry.STAGE_OF:
        print(f"knee: error: {registry.unknown(argv[0])}", file=sys.stderr)
        return 2
    args = parser().parse_args(argv)
    try:
        code: int = args.fn(args)
        return code
    except KneeError as e:
        print(f"knee {args.cmd}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as e:
        stopped = "; engine stopped" if args.cmd in BOOTS else ""
        print(f"knee {args.cmd}: interrupted ({e}){stopped}", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `knee trace ... | head`: the reader has gone; end as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
