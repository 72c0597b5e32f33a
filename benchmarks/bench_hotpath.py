"""CPU seconds of a sync's per-record Python stages (figures, not a test).

    .venv/bin/python benchmarks/bench_hotpath.py [--calls 1000000] [--records 100000]

score_fact: `--calls` calls over 1,000 varied facts (ages 0-3,000 days, some accessed,
some with a TTL or a source expiry). rows: `--records` synthetic records turned into
the facts rows a sync upserts (categorise, score with confidence, key, ref, content hash),
and the same rows rescored from the overlay's columns (score_row). CPU time
(user + system) of this process, so other jobs on the machine matter less than for
wall-clock figures.
"""
from __future__ import annotations

import argparse
import random
import resource
import tempfile
from pathlib import Path

from memwatch_overlay.connectors.base import Record
from memwatch_overlay.overlay.engine.scoring import DAY, CategoryPolicy, Thresholds, score_fact
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.rules.config import Config

AS_OF = 1_800_000_000.0


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def score_inputs(rnd: random.Random) -> list[tuple]:
    policies = [CategoryPolicy(h) for h in (180, 365, 730, 1095, 3650)] + [CategoryPolicy(365, 90)]
    out = []
    for _ in range(1000):
        accessed = None if rnd.random() < 0.7 else AS_OF - rnd.uniform(0, 500) * DAY
        expires = None if rnd.random() < 0.9 else AS_OF + rnd.uniform(-100, 100) * DAY
        out.append((AS_OF, AS_OF - rnd.uniform(0, 3000) * DAY, rnd.choice(policies), Thresholds(),
                    rnd.choice([0, 0, 0, 1, 3, 10]), accessed, expires))
    return out


def records(rnd: random.Random, n: int) -> list[Record]:
    keys = ["employer", "city", "email", "food", "language", "pet"]
    return [Record(source="bench", table="agent_facts", pk={"id": str(i)}, text=f"fact number {i} about {k}",
                   subject=f"u{i // 20}", key=k, created_at=AS_OF - rnd.uniform(0, 3000) * DAY)
            for i, k in ((i, rnd.choice(keys)) for i in range(n))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=1_000_000)
    ap.add_argument("--records", type=int, default=100_000)
    args = ap.parse_args()
    rnd = random.Random(5)

    inputs = score_inputs(rnd)
    rounds, rest = divmod(args.calls, len(inputs))
    start = cpu()
    for _ in range(rounds):
        for a in inputs:
            score_fact(*a)
    for a in inputs[:rest]:
        score_fact(*a)
    print(f"score_fact: {args.calls:,} calls, {cpu() - start:.2f} s CPU")

    recs = records(rnd, args.records)
    with tempfile.TemporaryDirectory() as tmp:
        store = OverlayStore(str(Path(tmp) / "o.db"))
        try:
            engine = SyncEngine(store, Config())
            fact_row = engine._row_builder(1, 1, AS_OF + 60, AS_OF)
            start = cpu()
            rows = [fact_row(rec) for rec in recs]
            print(f"fact rows: {len(rows):,} records, {cpu() - start:.2f} s CPU (categorising included)")
            stored = [{"category": r[7], "created_at": r[8], "updated_at": r[9], "refreshed_at": None,
                       "first_seen": r[14], "access_count": r[11], "accessed_at": r[10], "expires_at": r[12],
                       "confirmations": 0} for r in rows]
            start = cpu()
            for row in stored:
                engine.score_row(row, AS_OF + 30 * DAY)
            print(f"score_row: {len(stored):,} facts, {cpu() - start:.2f} s CPU")
        finally:
            store.close()


if __name__ == "__main__":
    main()
