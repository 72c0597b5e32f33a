"""What a detection worker's walk of a first audit's blocks costs per fact: CPU, and instructions.

    python benchmarks/bench_walk.py [--rows 20000] [--repeat 3] [--instructions 150 [--warm 150]] [--json]

bench_audit.py's `agent_facts` store (20 facts per user, six keys: every block keyed) is audited
with detection off into a fresh overlay. Then, each in its own subprocess, the overlay's blocks
are read in subject order as a sync reads them (`iter_subject_scan` of the walk's columns: the
baseline) and walked as a worker walks them (`parallel._walked`: the rows a worker receives,
the batch's topics prefetched, the edges as the overlay stores them). Printed: CPU microseconds
per fact of each (the median of --repeat runs), their ratio, the edges found and a digest of
them (two versions of the detector that find the same contradictions print the same digest).

--instructions BLOCKS walks the first BLOCKS blocks under valgrind's callgrind and subtracts the
same process walking none: instructions per fact, the same to a few instructions from run to
run (PYTHONHASHSEED=0), where CPU seconds on a shared machine move by a quarter. The figure to
compare two versions of the code with on a noisy machine (docs/benchmarks.md, "Issue 15, stop
49"). Needs valgrind on PATH. --warm W counts BLOCKS blocks after the first W instead (the
process walking W + BLOCKS minus the one walking W): what a walk pays per fact once the regexes
its texts reach are compiled, as through most of a large audit; the first blocks' figure also
holds those one-time costs.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_audit import AS_OF, build_store, no_detector_config
from benchlib import measured_env, run_script

# argv: overlay, blocks (-1: all), walk (0: only read the blocks); prints CPU seconds of the
# measured part, facts, edges, digest of what the walk found
WALK = """
import gc, hashlib, sys, time
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.overlay.detect.blocks import SCAN_COLUMNS, make_detector
from memwatch_overlay.overlay.detect.parallel import WALK_COLUMNS, _walked
limit, walk = int(sys.argv[2]), sys.argv[3] == "1"
store = OverlayStore(sys.argv[1])
detector = make_detector(None) if walk else None
gc.disable()
t = time.process_time()
blocks, subject = [], object()
for r in store.iter_subject_scan([1], SCAN_COLUMNS):
    if r["subject"] != subject:
        if len(blocks) == limit:
            break
        blocks.append([]); subject = r["subject"]
    blocks[-1].append(tuple(r)[:len(WALK_COLUMNS)])
store.close()
read = time.process_time() - t
if walk:
    rows = [([dict(zip(WALK_COLUMNS, r)) for r in b], {r[0] for r in b}) for b in blocks]
    t = time.process_time()
    found = _walked(detector, rows) if rows else []
    spent = time.process_time() - t
else:
    found, spent = [], read
edges = sum(len(e) for e, _ in found)
print(spent, sum(map(len, blocks)), edges, hashlib.md5(repr(found).encode()).hexdigest())
"""


def audited_overlay(tmp: Path, rows: int) -> Path:
    store, overlay = tmp / "agent.db", tmp / "overlay.db"
    build_store(store, rows)
    subprocess.run([sys.executable, "-m", "memwatch_overlay", "audit", str(store), "--overlay", str(overlay),
                    "--as-of", AS_OF, "--config", str(no_detector_config(tmp))],
                   stdout=subprocess.DEVNULL, check=True, env=measured_env())
    return overlay


def instructions(overlay: Path, blocks: int, warm: int = 0) -> tuple[int, int]:
    """callgrind's instruction count of walking `blocks` blocks after the first `warm`, and
    their facts (the process that walks `warm + blocks` minus the one that walks `warm`)."""
    def counted(n: int) -> tuple[int, int]:
        out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                              "-c", WALK, str(overlay), str(n), "1"], capture_output=True, text=True,
                             env={**measured_env(), "PYTHONHASHSEED": "0"})
        m = re.search(r"Collected : (\d+)", out.stderr)
        if out.returncode or m is None:
            sys.exit(f"callgrind run failed:\n{out.stderr[-2000:]}")
        return int(m.group(1)), int(out.stdout.split()[1])
    run_script(WALK, overlay, 1, 1)         # bytecode caches written before anything is counted
    (none, before), (some, facts) = counted(warm), counted(warm + blocks)
    return some - none, facts - before


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--instructions", type=int, default=0, metavar="BLOCKS")
    ap.add_argument("--warm", type=int, default=0, metavar="BLOCKS",
                    help="count the --instructions blocks after this many (their regexes compiled, caches warm)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        overlay = audited_overlay(Path(d), args.rows)
        reads = [[float(x) for x in run_script(WALK, overlay, -1, 0).split()[:2]] for _ in range(args.repeat)]
        walks = [run_script(WALK, overlay, -1, 1).split() for _ in range(args.repeat)]
        facts = int(walks[0][1])
        read_us = statistics.median(r[0] for r in reads) / facts * 1e6
        walk_us = statistics.median(float(w[0]) for w in walks) / facts * 1e6
        row = {"rows": args.rows, "facts": facts, "read_us_per_fact": round(read_us, 2),
               "walk_us_per_fact": round(walk_us, 1), "ratio": round(walk_us / read_us, 1),
               "edges": int(walks[0][2]), "digest": walks[0][3]}
        if args.instructions:
            if shutil.which("valgrind") is None:
                sys.exit("--instructions needs valgrind on PATH")
            n, walked = instructions(overlay, args.instructions, args.warm)
            row["instruction_blocks"], row["warm_blocks"] = args.instructions, args.warm
            row["instructions_per_fact"] = round(n / walked)
    if args.json:
        print(json.dumps(row))
        return
    print(f"{row['facts']:,} facts (keyed blocks of 20): walk {row['walk_us_per_fact']} us CPU per fact, "
          f"{row['ratio']}x reading them in subject order ({row['read_us_per_fact']} us); "
          f"{row['edges']:,} edges, digest {row['digest']}")
    if args.instructions:
        which = (f"first {args.instructions} blocks" if not args.warm
                 else f"{args.instructions} blocks after the first {args.warm}")
        print(f"  instructions per fact walked (callgrind, {which}): {row['instructions_per_fact']:,}")


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
