"""Writing the audit report, per format, from an overlay that already holds the facts.

    python benchmarks/bench_report.py [--size 100000] [--detector off|on] [--repeat 2]
        [--formats json,table,junit,sarif,markdown,html,github] [--overlay PATH]

Builds bench_audit's home-made store of --size rows and audits it once into a fresh
overlay (not timed; --overlay reuses one made earlier, e.g. by another checkout's code).
Then each format is written to /dev/null in its own subprocess, which opens the overlay
at the audit's --as-of (nothing to rescore) and times only the writing: wall seconds,
CPU seconds (ru_utime + ru_stime, steadier on a shared machine) and peak RSS. Figures
are medians of --repeat runs. `json` and `table` are overlay/output/tables.py's; the others go
through overlay/formats like `audit --format X` (one pass over the facts each).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_audit import AS_OF, AUDIT, build_store, measure, no_detector_config  # noqa: E402

FORMATS = ("json", "table", "junit", "sarif", "markdown", "html", "github")

# argv: overlay as_of format
WRITE = """
import os, resource, sys, time
from memwatch_overlay.overlay.output import publish as reports, tables as output
from memwatch_overlay.overlay.engine.audit import overlay_report
from memwatch_overlay.overlay.output.formats import render_many
from memwatch_overlay.core.timeparse import parse_as_of
from rich.console import Console
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
result = overlay_report(None, overlay_path=sys.argv[1], as_of=parse_as_of(sys.argv[2]))
fmt = sys.argv[3]
with open(os.devnull, "w") as out:
    t, c = time.perf_counter(), cpu()
    if fmt == "json":
        output.write_json(result, out)
    elif fmt == "table":
        output.render_table(result, Console(file=out, width=160, no_color=True))
    else:
        render_many(reports.contract(result), [(fmt, out, {})])
    wall, used = time.perf_counter() - t, cpu() - c
result.close()
print(wall, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, used)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--detector", choices=("off", "on"), default="off")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument("--overlay", type=Path, help="an overlay audited earlier at the same --as-of")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="memwatch-report-") as tmp_dir:
        tmp = Path(tmp_dir)
        overlay = args.overlay
        if overlay is None:
            store, overlay = tmp / "agent.db", tmp / "overlay.db"
            build_store(store, args.size)
            extra = [no_detector_config(tmp)] if args.detector == "off" else []
            measure(AUDIT, store, overlay, AS_OF, *extra)
        print(f"report writing from {overlay} (median of {args.repeat}; /dev/null)")
        for fmt in args.formats.split(","):
            runs = [measure(WRITE, overlay, AS_OF, fmt) for _ in range(args.repeat)]
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[2] for r in runs)
            rss = max(r[1] for r in runs) / 1024
            print(f"{fmt:9s} wall {wall:7.3f} s  cpu {cpu:7.3f} s  peak RSS {rss:4.0f} MB", flush=True)


if __name__ == "__main__":
    main()
