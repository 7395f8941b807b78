"""A runtime kind is declared once (knee.plan.runtimes) and launched by its own module
(knee.measure.runtime.<kind>): the rules, the plan's checks, the session, the README and the
audit ask the declaration, never the kind's name."""

import re

from knee.core import jsonio
from knee.measure import session
from knee.measure.host import gpu
from knee.measure.runtime import docker, external, process
from knee.plan import runtimes
from knee.publish import readme
from tests.helpers import ROOT

# reading a runtime's kind: runtime["kind"], rt["kind"], runtime.get("kind"), and the like
READS_KIND = re.compile(r"""(runtime|rt)"?\]?(\[["']kind["']\]|\.get\(["']kind["']\))""")


def sources():
    yield from (ROOT / "workflow" / "knee").rglob("*.py")
    yield from (ROOT / "workflow" / "rules").glob("*.smk")
    yield ROOT / "Snakefile"


def test_only_the_declaration_reads_a_runtime_kind():
    found = {str(p.relative_to(ROOT)): READS_KIND.findall(p.read_text()) for p in sources()}
    assert {p for p, hits in found.items() if hits} == {"workflow/knee/plan/runtimes.py"}
    assert READS_KIND.search('plan["runtime"]["kind"] == "docker"')  # the pattern finds one
    assert READS_KIND.search('rt.get("kind")') and READS_KIND.search('rt["kind"]')


def test_every_kind_the_schema_allows_is_declared_and_launched_by_its_own_module():
    kinds = jsonio.schema_file("config")["properties"]["runtime"]["properties"]["kind"]["enum"]
    assert list(runtimes.RUNTIMES) == kinds
    assert session.LAUNCH == {"process": process.launch, "docker": docker.launch,
                              "external": external.launch}
    assert all(runtimes.RUNTIMES[k].kind == k for k in kinds)


def test_the_facts_a_kind_declares_are_what_its_consumers_do():
    external_plan = {"runtime": {"kind": "external"}}
    assert runtimes.of(external_plan).caveat == readme.EXTERNAL
    comparison = {"verdict": "VALID", "rows": []}
    assert readme.caveats(comparison, {}, None, runtimes.of(external_plan)) == [readme.EXTERNAL]
    assert readme.caveats(comparison, {}, None, runtimes.RUNTIMES["docker"]) == []
    assert gpu.ids({"kind": "process", "gpus": [1]}) == [1]
    assert gpu.ids({"kind": "docker", "gpus": [1]}) is None  # the container's request
    only = {k for k, r in runtimes.RUNTIMES.items() if r.cleanup_flags}
    assert only == {"docker"} and runtimes.RUNTIMES["docker"].cleanup_flags == "--docker"
