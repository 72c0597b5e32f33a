"""Contradiction detection for one user's whole memory: detection on against off.

    python benchmarks/bench_detect.py [--sizes 10000] [--repeat 1] [--embeddings [--no-pair-encoder]] [--json]

Two stores of ONE user (a personal assistant's memory), each audited zero-config into a
fresh overlay with detection on (the default rules) and off (`[detector] enabled = false`),
every audit in its own subprocess so its peak RSS (ru_maxrss) is its own:

  keyed     bench_audit.py's `agent_facts` table (six keys: employer, city, email ...; every
            value differs), all rows one user's: the store where all-pairs detection
            stored 444 contradictions per fact at 10,000;
  text      free text: jobs and homes that change and are restated, tastes that turn,
            endings ("handed in my notice at ..."), key-value rows and many notes sharing
            words.

A daemon's steady state follows: one process syncs the store fully, then one new memory
at a time incrementally (ten times), the detector warm as in a running daemon; printed:
the median seconds and comparisons of one such sync.

Printed per store and size: seconds on / off and their ratio, the same in CPU seconds (user +
system of the audit's process: less moved than wall time by other work on a shared machine)
with detection's CPU milliseconds per 1,000 facts, stored contradictions per fact,
comparisons per fact, peak RSS. Targets (issue 14): <= 2 stored contradictions per
fact, detection on <= 10x off, peak RSS < 300 MB. With --embeddings, a third audit adds
the semantic layer (`[embeddings] enabled = true`, the offline MiniLM) and prints its
seconds per 1,000 facts over the rules-only audit (model loading included, and shown), how
many facts and texts (with clauses) it encoded, and a re-audit of the unchanged store into the
same overlay (nothing to encode). With --embeddings a third store runs too:

  many      agent_facts of many users with one or two memories each (two thirds of the
            users): a fact alone in its block is compared with nothing and never encoded.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sqlite3
import statistics
import tempfile
from pathlib import Path

from bench_audit import agent_rows, embeddings_config
from benchlib import run_script

AS_OF = "2026-11-29"

# argv: store overlay as_of [config] ; one zero-config audit; prints seconds, ru_maxrss (KB),
# facts, stored contradictions, comparisons, CPU seconds (user + system) of the audit
AUDIT = """
import sys, time, resource
from memwatch_overlay.overlay.engine.audit import audit
from memwatch_overlay.core.timeparse import parse_as_of
from memwatch_overlay.rules.config import load_config
cfg = load_config(sys.argv[4]) if len(sys.argv) > 4 else None
ru = resource.getrusage(resource.RUSAGE_SELF)
cpu = ru.ru_utime + ru.ru_stime
t = time.perf_counter()
result = audit(sys.argv[1], cfg, as_of=parse_as_of(sys.argv[3]), overlay_path=sys.argv[2])
s = time.perf_counter() - t
n = result.summary["total"]
stored = result.count_contradictions()
comparisons = sum(st.comparisons for st in result.stats)
result.close()
ru = resource.getrusage(resource.RUSAGE_SELF)
print(s, ru.ru_maxrss, n, stored, comparisons, ru.ru_utime + ru.ru_stime - cpu)
"""

# argv: store overlay as_of ; a full sync, then ten one-row incremental syncs with one detector;
# prints the median seconds and comparisons of the incremental ones, and ru_maxrss (KB)
TICKS = """
import sqlite3, statistics, sys, time, resource
from memwatch_overlay.overlay.engine.audit import resolve_sources
from memwatch_overlay.overlay.detect.blocks import make_detector
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.core.timeparse import parse_as_of
store = OverlayStore(sys.argv[2])
cfg, sources = resolve_sources(sys.argv[1], None, None, store)
engine = SyncEngine(store, cfg, detector=make_detector(cfg))
as_of = parse_as_of(sys.argv[3])
engine.sync(sources[0], as_of=as_of, full=True)
times, work = [], []
for i in range(10):
    conn = sqlite3.connect(sys.argv[1])
    user = conn.execute("SELECT user_id FROM agent_facts LIMIT 1").fetchone()[0]    # the store's one user
    conn.execute("INSERT INTO agent_facts (user_id, fact_key, fact_value, created_at) VALUES "
                 "(?, NULL, ?, '2026-11-29 12:00:00')", (user, f"I just joined Company{i}."))
    conn.commit()
    conn.close()
    t = time.perf_counter()
    stats = engine.sync(sources[0], as_of=as_of, full=False)
    times.append(time.perf_counter() - t)
    work.append(stats.comparisons)
print(statistics.median(times), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, statistics.median(work))
"""

COMPANIES = ["Google", "Stripe", "Meta", "Deloitte", "Grab", "Globant", "Shopify", "Spotify", "Airbus",
             "Siemens", "Nokia", "Canva", "Atlassian", "Zalando", "Klarna", "Revolut", "Monzo", "Adyen"]
CITIES = ["Oslo", "Bergen", "Leeds", "Lisbon", "Porto", "Madrid", "Krakow", "Jakarta", "Surabaya", "Lagos",
          "Nairobi", "Quito", "Lima", "Hanoi", "Osaka", "Perth", "Denver", "Austin"]
FOODS = ["sushi", "thai food", "pizza", "ramen", "tacos", "curry", "falafel", "dumplings"]
FRIENDS = ["Ben", "Chidi", "Dana", "Eva", "Farid", "Gus", "Hana", "Ivo", "Jun", "Kemal"]


def text_rows(n: int, seed: int = 7):
    """(user, key, text, created_at) of one user's n free-text memories, a few hours apart."""
    rnd = random.Random(seed)
    job, city = rnd.choice(COMPANIES), rnd.choice(CITIES)
    start = dt.datetime(2026, 11, 29) - dt.timedelta(hours=5 * n)
    for i in range(n):
        r = rnd.random()
        key = None
        if r < 0.08:
            job = rnd.choice(COMPANIES)
            text = rnd.choice([f"I just joined {job}.", f"I work at {job}.", f"Started a new job at {job}."])
        elif r < 0.14:
            text = f"I work at {job}."
        elif r < 0.20:
            city = rnd.choice(CITIES)
            text = rnd.choice([f"We moved to {city}.", f"I live in {city}."])
        elif r < 0.24:
            key, text = "employer", rnd.choice(COMPANIES)
        elif r < 0.32:
            food = rnd.choice(FOODS)
            text = rnd.choice([f"I love {food}.", f"I do not like {food} anymore."])
        elif r < 0.36:
            text = f"I handed in my notice at {job}."
        else:
            text = f"Had coffee with {rnd.choice(FRIENDS)} near the office in {city}."
        yield ("u1", key, text, (start + dt.timedelta(hours=5 * i)).strftime("%Y-%m-%d %H:%M:%S"))


def build(path: Path, rows) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE agent_facts (id INTEGER PRIMARY KEY, user_id TEXT, fact_key TEXT, "
                 "fact_value TEXT, created_at TEXT)")
    conn.executemany("INSERT INTO agent_facts (user_id, fact_key, fact_value, created_at) VALUES (?, ?, ?, ?)",
                     rows)
    conn.commit()
    conn.close()


def encoded(overlay: Path) -> tuple[int, int]:
    """(facts with a vector, texts encoded for them) in an overlay the embeddings audit made."""
    conn = sqlite3.connect(overlay)
    try:
        facts, texts = conn.execute(
            "SELECT count(*), coalesce(sum(length(vector) / (4 * dim)), 0) FROM fact_vectors").fetchone()
    finally:
        conn.close()
    return int(facts), int(texts)


def measure(*args) -> list[float]:
    return [float(x) for x in run_script(AUDIT, *args).split()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--embeddings", action="store_true")
    ap.add_argument("--no-pair-encoder", action="store_true",
                    help="with --embeddings: the semantic layer without the pair encoder (`pair_encoder = false`)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    out = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        off = tmp / "nodetect.toml"
        off.write_text("[detector]\nenabled = false\n")
        emb = embeddings_config(tmp) if args.embeddings else None
        if args.embeddings and emb is None:
            raise SystemExit("--embeddings: install the embeddings extra first")
        if emb is not None and args.no_pair_encoder:
            emb.write_text(emb.read_text() + "pair_encoder = false\n")
        modes = ("on", "off", "emb") if emb else ("on", "off")
        for n in [int(x) for x in args.sizes.split(",")]:
            stores = [("keyed", agent_rows(n, users=1)), ("text", text_rows(n))]
            if emb:
                stores.append(("many", agent_rows(n, users=max(1, 2 * n // 3))))
            for kind, rows in stores:
                store = tmp / f"{kind}-{n}.db"
                build(store, rows)
                figures = {}
                for mode in modes:
                    runs = []
                    for r in range(args.repeat):
                        overlay = tmp / f"o-{kind}-{n}-{mode}-{r}.db"
                        extra = [str(off)] if mode == "off" else [str(emb)] if mode == "emb" else []
                        runs.append(measure(store, overlay, AS_OF, *extra))
                    figures[mode] = runs
                on, offr = figures["on"], figures["off"]
                row = {"store": kind, "facts": int(on[-1][2]),
                       "seconds_on": round(statistics.median(x[0] for x in on), 3),
                       "seconds_off": round(statistics.median(x[0] for x in offr), 3),
                       "stored_per_fact": round(on[-1][3] / max(1, on[-1][2]), 3),
                       "comparisons_per_fact": round(on[-1][4] / max(1, on[-1][2]), 2),
                       "peak_mb_on": round(max(x[1] for x in on) / 1024, 1),
                       "peak_mb_off": round(max(x[1] for x in offr) / 1024, 1)}
                row["ratio"] = round(row["seconds_on"] / row["seconds_off"], 2)
                # CPU seconds move less than wall time on a shared machine
                row["cpu_on"] = round(statistics.median(x[5] for x in on), 3)
                row["cpu_off"] = round(statistics.median(x[5] for x in offr), 3)
                row["cpu_ratio"] = round(row["cpu_on"] / row["cpu_off"], 2)
                row["detect_ms_per_1000"] = round((row["cpu_on"] - row["cpu_off"]) * 1e6 / max(1, row["facts"]), 0)
                if emb:
                    e = figures["emb"]
                    row["seconds_embeddings"] = round(statistics.median(x[0] for x in e), 3)
                    row["embeddings_seconds_per_1000"] = round(
                        (row["seconds_embeddings"] - row["seconds_on"]) * 1000 / max(1, row["facts"]), 3)
                    row["stored_per_fact_embeddings"] = round(e[-1][3] / max(1, e[-1][2]), 3)
                    row["peak_mb_embeddings"] = round(max(x[1] for x in e) / 1024, 1)
                    last = tmp / f"o-{kind}-{n}-emb-{args.repeat - 1}.db"
                    row["facts_encoded"], row["texts_encoded"] = encoded(last)
                    row["seconds_reaudit_embeddings"] = round(measure(store, last, AS_OF, str(emb))[0], 3)
                tick = [float(x) for x in run_script(TICKS, store, tmp / f"o-{kind}-{n}-ticks.db", AS_OF).split()]
                row["tick_seconds"], row["tick_comparisons"] = round(tick[0], 4), tick[2]
                row["tick_peak_mb"] = round(tick[1] / 1024, 1)
                out.append(row)
                if not args.json:
                    print(f"{kind:6} {row['facts']:>7} facts: on {row['seconds_on']:.2f} s, off "
                          f"{row['seconds_off']:.2f} s, ratio {row['ratio']:.2f}x; "
                          f"{row['stored_per_fact']:.3f} stored contradictions and "
                          f"{row['comparisons_per_fact']:.2f} comparisons per fact; "
                          f"peak RSS {row['peak_mb_on']:.0f} MB on, {row['peak_mb_off']:.0f} MB off")
                    print(f"{'':6} CPU seconds: on {row['cpu_on']:.2f}, off {row['cpu_off']:.2f}, ratio "
                          f"{row['cpu_ratio']:.2f}x; detection {row['detect_ms_per_1000']:.0f} CPU ms per 1,000 facts")
                    print(f"{'':6} one new memory, incremental sync: {row['tick_seconds'] * 1000:.0f} ms, "
                          f"{row['tick_comparisons']:.0f} comparisons (peak RSS {row['tick_peak_mb']:.0f} MB)")
                    if emb:
                        print(f"{'':6} with embeddings {row['seconds_embeddings']:.2f} s "
                              f"({row['seconds_embeddings'] / max(1e-9, row['seconds_on']):.1f}x the rules): "
                              f"+{row['embeddings_seconds_per_1000']:.2f} s per 1,000 facts over the rules, "
                              f"{row['facts_encoded']} facts encoded ({row['texts_encoded']} texts with clauses), "
                              f"{row['stored_per_fact_embeddings']:.3f} stored per fact, "
                              f"peak RSS {row['peak_mb_embeddings']:.0f} MB; re-audit "
                              f"{row['seconds_reaudit_embeddings']:.2f} s")
    if args.json:
        print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
