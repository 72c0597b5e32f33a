"""MemWatch.add / check / search cost as the overlay grows (medians, ms; figures, not a test).

    .venv/bin/python benchmarks/bench_api.py [--facts 4500] [--subjects 50]

Prints the median cost of one add() over the first 500 facts and over the last 500,
their ratio (1.0 = no growth with the overlay's size; the detector's per-block work
grows with the subject's facts of one category, i.e. facts / subjects), and check()
and search() at the final size.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from memwatch_overlay import MemWatch


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--facts", type=int, default=4500)
    ap.add_argument("--subjects", type=int, default=50)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, MemWatch(db=str(Path(tmp) / "o.db")) as mw:
        costs = [timed(lambda i=i: mw.add(f"note_{i}", f"likes topic number {i}", subject=f"u{i % args.subjects}"))
                 for i in range(args.facts)]
        first, last = statistics.median(costs[:500]), statistics.median(costs[-500:])
        check = statistics.median(timed(lambda i=i: mw.check("I just moved to Surabaya for my new job at Anthropic",
                                                             subject=f"u{i}")) for i in range(20))
        search = statistics.median(timed(lambda: mw.search("topic number 42")) for _ in range(5))
    print(f"add: first 500 {first:.2f} ms, last 500 {last:.2f} ms, ratio {last / first:.1f} "
          f"({args.facts} facts, {args.subjects} subjects)")
    print(f"check: {check:.2f} ms   search: {search:.1f} ms")


if __name__ == "__main__":
    main()
