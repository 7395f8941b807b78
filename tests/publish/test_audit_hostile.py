"""A results folder handed to `knee audit` or `knee trace` by someone hostile: a file that is a
link leading out of the folder, a device, a sparse file of gigabytes, a compressed file that
expands a thousandfold, a manifest listing one file a million times. Each is refused quickly,
naming the entry, with no traceback, and nothing from outside the folder is printed."""

import gzip
import os
import shutil
import time

import pytest

from tests.helpers import ROOT, run_knee

CANARY = "knee-canary-outside-the-folder-7f3a"


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "smollm2-cpu"
    shutil.copytree(ROOT / "results" / "smollm2-cpu", root)
    return root


def refused(root, *expect, seconds=30, command=("audit",)):
    t0 = time.monotonic()
    r = run_knee(command[0], root, *command[1:], timeout=120)
    took = time.monotonic() - t0
    said = r.stdout + r.stderr
    assert r.returncode != 0, said[-2000:]
    assert "Traceback" not in said and CANARY not in said, said[-2000:]
    for e in expect:
        assert e in said, said[-2000:]
    assert took < seconds, took
    return said


def test_a_readme_that_links_outside_is_named_and_never_read(folder, tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text(f"# {CANARY}\n")
    (folder / "README.md").unlink()
    (folder / "README.md").symlink_to(outside)
    refused(folder, "README.md is a symbolic link: not followed")
    refused(folder, "README.md is a symbolic link", command=("trace", "C8"))


def test_a_raw_file_that_links_to_a_system_file_is_refused(folder):
    raw = next((folder / "raw" / "1-control").glob("sweep.json.gz"))
    raw.unlink()
    raw.symlink_to("/etc/passwd")
    refused(folder, "raw/1-control/sweep.json.gz is a symbolic link")


def test_a_folder_that_is_itself_a_link_is_refused(folder, tmp_path):
    link = tmp_path / "linked"
    link.symlink_to(folder)
    refused(link, "a symbolic link")


def test_a_sparse_file_of_gigabytes_is_refused_before_it_is_read(folder):
    with open(folder / "raw" / "1-control" / "huge.json", "wb") as f:
        f.truncate(5 << 30)
    refused(folder, "raw/1-control/huge.json: 5368709120 bytes, over the", seconds=10)


def test_a_fifo_is_refused_without_opening_it(folder):
    os.mkfifo(folder / "raw" / "fifo")
    refused(folder, "raw/fifo is not a regular file", seconds=10)


def test_a_compressed_file_that_expands_a_thousandfold_is_refused(folder):
    raw = folder / "raw" / "1-control" / "sweep.json.gz"
    with gzip.open(raw, "wb", compresslevel=9) as f:
        block = b"\x20" * (1 << 20)
        for _ in range(300):
            f.write(block)
    assert raw.stat().st_size < 1 << 20
    refused(folder, "sweep.json.gz: expands past the", seconds=60)


def test_a_manifest_listing_one_file_a_million_times_is_refused_quickly(folder):
    manifest = folder / "MANIFEST.sha256"
    line = manifest.read_text().splitlines()[0] + "\n"
    manifest.write_text(line * 1_000_000)
    refused(folder, "MANIFEST.sha256", seconds=20)


def test_a_manifest_listing_a_file_twice_says_so(folder):
    manifest = folder / "MANIFEST.sha256"
    text = manifest.read_text()
    manifest.write_text(text + text.splitlines()[0] + "\n")
    refused(folder, "is listed more than once")


@pytest.mark.parametrize("name, content, expect", [
    ("plan.json", b"[1, 2, 3]\n", "plan.json: a JSON list, not the object a knee/plan file is"),
    ("raw/requests.parquet", b"PAR1 not parquet", "raw/requests.parquet: not a Parquet file"),
    ("comparison/rows.csv", b"rule,\xff\xfe\n", "comparison/rows.csv: "),
    ("README.md", b"# \xc3\x28 not UTF-8\n", "README.md: not UTF-8 text"),
    ("receipts/1-control-stop.json", b'{"schema": "knee/stop", "n": ' + b"9" * 5000 + b"}",
     "receipts/1-control-stop.json: not JSON"),
])
def test_malformed_files_are_named_without_a_traceback(folder, name, content, expect):
    (folder / name).write_bytes(content)
    refused(folder, expect)


def test_knee_reads_and_writes_utf8_whatever_the_locale(folder, tmp_path):
    """Under a locale that is not UTF-8 (LC_ALL=C with Python's own coercion off), a config
    whose question holds non-ASCII text validates and a published folder (its READMEs hold
    "…" and "−") audits."""
    import os

    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0",
           "PYTHONCOERCECLOCALE": "0", "PYTHONIOENCODING": ""}
    config = tmp_path / "unicode.yaml"
    config.write_text((ROOT / "config" / "config.yaml").read_text(encoding="utf-8").replace(
        "question: ", "question: ±1.5 % — ", 1), encoding="utf-8")
    r = run_knee("validate-config", config, env=env, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    r = run_knee("audit", folder, env=env, timeout=300)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-2000:]


def test_an_untouched_folder_audits_under_a_2_gib_memory_cap(folder):
    import resource
    import subprocess

    from tests.helpers import KNEE

    def capped():
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    r = subprocess.run([*KNEE, "audit", str(folder)], cwd=ROOT, capture_output=True, text=True,
                       timeout=300, preexec_fn=capped)
    said = r.stdout + r.stderr
    assert r.returncode == 0 and r.stdout.rstrip().endswith(": OK"), said[-2000:]
