"""index.html: a results folder's README as one styled page, read in a real browser. The page
is the README's own Markdown rendered (so the two never disagree); in headless Chromium the
verdict and its box fill the first screen of a 1280 × 900 window in the verdict's colour, every
figure loads from the folder (offline, from file://), no table wider than the window pushes
the page sideways, and no table of more than 40 rows shows until it is opened."""

from __future__ import annotations

import html
import http.server
import json
import os
import re
import shutil
import subprocess
import threading
from functools import partial
from pathlib import Path

import pytest

from knee.core import layout
from knee.publish import htmlpage
from tests.helpers import ROOT

RESULTS = ROOT / "results"
PUBLISHED = sorted(p.parent for p in RESULTS.glob(f"*/{layout.PAGE}"))
BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")
# one GPU folder and one CPU folder, each with a FAIL on its first screen
IN_BROWSER = ("qwen-draft-h100", "ksched-cpu")
FAIL_RED = (0xCF, 0x22, 0x2E)


def test_every_published_folder_has_the_page_of_its_readme():
    folders = {p.parent.name for p in RESULTS.glob(f"*/{layout.MANIFEST}")}
    assert folders and folders == {p.name for p in PUBLISHED}
    for root in PUBLISHED:
        page = (root / layout.PAGE).read_text(encoding="utf-8")
        assert page == htmlpage.render((root / layout.README).read_text(encoding="utf-8")), root


def test_the_page_colours_the_verdicts_and_names_each_json_field_it_links():
    text = (RESULTS / "qwen-draft-h100" / layout.README).read_text(encoding="utf-8")
    page = htmlpage.render(text)
    assert "<title>qwen-draft-h100: bar CONFOUNDED (the rules alone: FAIL): single-stream gain " \
           "-33.34%, 90% interval" in page
    h1 = re.search(r"<h1>(.*?)</h1>", page, re.S)[1]
    assert '<span class="v CONFOUNDED">CONFOUNDED</span>' in h1
    assert '<span class="v FAIL">FAIL</span>' in h1
    assert '<strong class="v FAIL">FAIL</strong>' in page
    assert ('<a href="comparison/bar.json#/rules/0/estimate" title="comparison/bar.json, field '
            '/rules/0/estimate">-33.34%</a>') in page
    assert page.count("<details>") == text.count("<details>") > 0
    assert "<script" not in page


def test_text_from_a_config_stays_text_on_the_page():
    hostile = ("# forged: PASS\n\nA question <script>alert(1)</script> "
               "[x](javascript:alert(1)) ![i](https://evil.example/i.png)\n")
    from knee.publish import mdtext

    page = htmlpage.render(f"# name: bar FAIL\n\n{mdtext.text(hostile)}\n")
    body = page.split("<main>", 1)[1]
    assert "<script" not in body and "<a " not in body and "<img" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body  # shown, as text
    assert body.count("<h1>") == 1


def browser() -> str | None:
    found = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
    if found is None and os.environ.get("KNEE_REQUIRE_BROWSER"):
        pytest.fail("KNEE_REQUIRE_BROWSER is set and no Chromium is on PATH")
    return found


HARNESS = """<!doctype html><html><body style="margin:0">
<iframe id="f" src="index.html" style="width:1280px;height:900px;border:0"></iframe>
<pre id="out"></pre>
<script>
document.getElementById("f").addEventListener("load", () => {
  const d = document.getElementById("f").contentDocument, w = d.defaultView;
  const h1 = d.querySelector("h1"), box = d.querySelector("blockquote");
  const shown = (e) => e.checkVisibility();
  document.getElementById("out").textContent = JSON.stringify({
    title: d.title, h1_bottom: h1.getBoundingClientRect().bottom,
    box_bottom: box.getBoundingClientRect().bottom,
    box_lines: box.querySelectorAll("br").length + 1,
    verdict_colour: w.getComputedStyle(h1.querySelector(".v")).color,
    images: d.images.length,
    broken: [...d.images].filter((i) => !(i.complete && i.naturalWidth > 0))
      .map((i) => i.getAttribute("src")),
    overflow_px: d.documentElement.scrollWidth - d.documentElement.clientWidth,
    long_tables_shown: [...d.querySelectorAll("table")]
      .filter((t) => t.tBodies[0] && t.tBodies[0].rows.length > 40 && shown(t)).length,
    long_tables: [...d.querySelectorAll("table")]
      .filter((t) => t.tBodies[0] && t.tBodies[0].rows.length > 40).length,
  });
});
</script></body></html>"""


class Folder(http.server.SimpleHTTPRequestHandler):
    """The results folder on 127.0.0.1, and the harness page beside its index.html."""

    def do_GET(self):
        if self.path != "/.harness.html":
            return super().do_GET()
        body = HARNESS.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        return None

    def log_message(self, *args):
        pass


def run_browser(exe: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu",
                           "--hide-scrollbars", "--no-first-run", *args],
                          capture_output=True, text=True, timeout=120)


def measured(exe: str, root: Path) -> dict:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(Folder, directory=root))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/.harness.html"
        r = run_browser(exe, "--virtual-time-budget=30000", "--dump-dom", url)
    finally:
        server.shutdown()
        server.server_close()
    out = re.search(r'<pre id="out">(.*?)</pre>', r.stdout, re.S)
    assert out and out[1], r.stderr[-2000:]
    return json.loads(html.unescape(out[1]))


@pytest.mark.parametrize("name", IN_BROWSER)
def test_the_page_answers_on_its_first_screen_in_a_real_browser(name, tmp_path):
    exe = browser()
    if exe is None:
        pytest.skip("no Chromium on PATH (CI installs chromium-headless-shell)")
    root = RESULTS / name
    m = measured(exe, root)
    first = (root / layout.README).read_text(encoding="utf-8").splitlines()[0]
    assert m["title"] == htmlpage.title(first)
    assert m["h1_bottom"] < m["box_bottom"] <= 900 and 2 <= m["box_lines"] <= 5, m
    assert m["verdict_colour"] in ("rgb(207, 34, 46)", "rgb(26, 127, 55)", "rgb(154, 103, 0)")
    assert m["images"] >= 4 and m["broken"] == [], m
    assert m["overflow_px"] <= 0 and m["long_tables_shown"] == 0, m
    # offline: the page itself, from file://, its figures beside it; the first screen holds
    # the verdict's colour (FAIL's red) in the title, above the fold
    shot = tmp_path / "first-screen.png"
    r = run_browser(exe, "--window-size=1280,900", f"--screenshot={shot}",
                    (root / layout.PAGE).as_uri())
    assert shot.is_file(), r.stderr[-2000:]
    import matplotlib.image

    pixels = (matplotlib.image.imread(shot)[:, :, :3] * 255).round()
    assert pixels.shape[:2] == (900, 1280)
    red = (abs(pixels - FAIL_RED).max(axis=2) <= 8)
    rows = red.any(axis=1).nonzero()[0]
    assert red.sum() > 200 and rows.min() < 120, (red.sum(), rows[:5])
