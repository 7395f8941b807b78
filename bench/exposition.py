"""Benchmark: reading an engine's Prometheus scrapes, knee's fast reading against
prometheus_client's parser, on every scrape of a published folder.

    python bench/exposition.py [results/ksched-h200-35b-adj] [--repeats 3]

Prints the scrapes read, each reading's best time over the repeats, and how many times faster
the fast reading is (tests/analyze/test_exposition.py holds the two to the same samples).
"""

from __future__ import annotations

import argparse
import gzip
import time
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from knee.analyze.window import exposition


def scrapes(folder: Path) -> list[str]:
    out = []
    for path in sorted(folder.glob("raw/*/*.prom.*")):
        data = path.read_bytes()
        out.append((gzip.decompress(data) if path.suffix == ".gz" else data).decode())
    return out


def client(text: str) -> int:
    return sum(len(f.samples) for f in text_string_to_metric_families(text))


def best(read, texts: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for text in texts:
            read(text)
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", nargs="?", type=Path, default=Path("results/ksched-h200-35b-adj"))
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    texts = scrapes(a.folder)
    fast = best(exposition.samples, texts, a.repeats)
    slow = best(client, texts, a.repeats)
    size = sum(len(t) for t in texts) / 1e6
    print(f"{a.folder}: {len(texts)} scrapes, {size:.1f} MB of text")
    print(f"  prometheus_client: {slow:.2f} s ({1e3 * slow / len(texts):.1f} ms a scrape)")
    print(f"  fast reading:      {fast:.2f} s ({1e3 * fast / len(texts):.1f} ms a scrape)")
    print(f"  {slow / fast:.1f} times faster")


if __name__ == "__main__":
    main()
