"""CPU seconds of slot extraction (``Extractor.read``) with the prefilter and plainly.

    python benchmarks/bench_slots.py [--rows 100000] [--repeat 2]

Reads the texts of bench_audit.py's `agent_facts` table (built in a temporary folder) and
reads each one with ``Extractor(pack)`` (one literal scan per clause decides which regexes
and guards run) and with ``Extractor(pack, prefilter=False)`` (each regex's literals
checked one by one, every guard searched), alternating, in one process; checks that both
give the same readings. CPU time is ``ru_utime + ru_stime`` around the reads alone.
"""
from __future__ import annotations

import argparse
import resource
import sqlite3
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_audit import build_store  # noqa: E402

from memwatch_overlay.overlay.detect.pack import load_pack  # noqa: E402
from memwatch_overlay.overlay.detect.slots import Extractor  # noqa: E402


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed_reads(ex: Extractor, texts: list[tuple[str, frozenset]]) -> tuple[float, list]:
    t = cpu()
    out = [ex.read(text, words) for text, words in texts]
    return cpu() - t, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "agent.db"
        build_store(store, args.rows)
        rows = sqlite3.connect(store).execute("SELECT user_id, fact_value FROM agent_facts").fetchall()
    texts = [(text, frozenset({user})) for user, text in rows]
    pack = load_pack()
    fast, plain = Extractor(pack), Extractor(pack, prefilter=False)
    for i in range(args.repeat):
        t_fast, a = timed_reads(fast, texts)
        t_plain, b = timed_reads(plain, texts)
        assert a == b, "the prefiltered readings differ from the plain ones"
        n = len(texts)
        print(f"run {i + 1}: prefilter {t_fast:.2f} s ({t_fast / n * 1e6:.1f} us/text), "
              f"plain {t_plain:.2f} s ({t_plain / n * 1e6:.1f} us/text), {n:,} texts, same readings")


if __name__ == "__main__":
    main()
