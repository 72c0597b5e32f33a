"""Category assignment with the RE2 accelerator (the `fast` extra) against Python `re`, in one run.

    python benchmarks/bench_categorize.py [--rows 100000] [--store agent_facts.db] [--repeat 3]

Categorises the (fact_key, fact_value) rows of a home-made `agent_facts` table (the one
bench_audit.py builds; built here in a temporary folder unless --store names one) with the
default rule pack, twice per repeat, alternating: Categorizer(accelerate=False), every
text regex searched with Python `re`, and Categorizer(), one RE2 set pass per text. Times
are CPU seconds (user + system) of this process, medians of --repeat; the ratio divides
two figures of this run. Also the share of texts RE2 answered for (ASCII, non-empty), and a
check that both give the same category to every row.
"""
from __future__ import annotations

import argparse
import resource
import sqlite3
import statistics
import sys
import tempfile
from pathlib import Path

from memwatch_overlay.rules.categorize import Categorizer

sys.path.insert(0, str(Path(__file__).parent))
from bench_audit import build_store  # noqa: E402


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def categorize_all(categorizer: Categorizer, rows: list[tuple[str, str]]) -> tuple[float, list[str]]:
    start = cpu_seconds()
    out = [categorizer.categorize("agent_facts", key, text) for key, text in rows]
    return cpu_seconds() - start, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--store", type=Path, help="an existing agent_facts store (read-only)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        store = args.store
        if store is None:
            store = Path(tmp) / "agent.db"
            build_store(store, args.rows)
        conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
        rows = conn.execute("SELECT fact_key, fact_value FROM agent_facts LIMIT ?", (args.rows,)).fetchall()
        conn.close()

    accelerated = Categorizer()
    if not accelerated.accelerated:
        sys.exit("google-re2 is not installed (pip install -e '.[fast]'): nothing to compare")
    times: dict[str, list[float]] = {"re": [], "re2": []}
    results: dict[str, list[str]] = {}
    for _ in range(args.repeat):
        # fresh categorizers each time: the per-key cache is part of what is measured
        for name, categorizer in (("re", Categorizer(accelerate=False)), ("re2", Categorizer())):
            seconds, results[name] = categorize_all(categorizer, rows)
            times[name].append(seconds)
    if results["re"] != results["re2"]:
        sys.exit("the accelerated categories differ from Python re's")
    ascii_share = sum(1 for _, text in rows if text and text.isascii()) / len(rows)
    re_s, re2_s = statistics.median(times["re"]), statistics.median(times["re2"])
    print(f"categorize {len(rows):,} rows ({ascii_share:.0%} ASCII texts: RE2 answers for those), "
          f"CPU seconds, median of {args.repeat}")
    print(f"  Python re        {re_s:8.3f} s  {re_s / len(rows) * 1e6:6.2f} us/row")
    print(f"  RE2 set (fast)   {re2_s:8.3f} s  {re2_s / len(rows) * 1e6:6.2f} us/row")
    print(f"  ratio re / re2   {re_s / re2_s:8.1f}x   (same category for every row: yes)")


if __name__ == "__main__":
    main()
