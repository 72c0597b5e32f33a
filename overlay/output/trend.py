"""`report --trend`: how staleness moved over the last N audits.

Every `audit` records its summary in the overlay's ``runs`` table. Runs over different
sets of sources are not comparable, so a trend follows one set: the sources of the
latest audit, or only the source named with ``--source``.
"""
from __future__ import annotations

import json
from typing import IO

from rich import box
from rich.console import Console
from rich.table import Table

from memwatch_overlay.rules.config import Config
from memwatch_overlay.overlay.output.formats.digest import stale_ratio
from memwatch_overlay.core.timeparse import to_iso

DEFAULT_RUNS = 10
SPARKS = "▁▂▃▄▅▆▇█"


def trend_of(store, limit: int = DEFAULT_RUNS, source: str | None = None) -> dict:
    """{"sources": [...], "runs": [...]}, oldest run first; each run carries its summary
    figures, ``stale_ratio`` and ``delta_stale_ratio`` (change since the previous run shown)."""
    wanted = [source] if source else None
    picked: list[dict] = []
    for run in store.iter_runs(kind="audit"):
        if len(picked) >= limit:
            break
        names = sorted(run["sources"])
        if wanted is None:
            wanted = names
        if names == wanted:
            picked.append(run)
    rows, previous = [], None
    for run in reversed(picked):
        s = run["summary"]
        ratio = stale_ratio(s)
        rows.append({"id": run["id"], "as_of": to_iso(run["as_of"]),
                     "started_at": to_iso(run["started_at"]), "passed": run["passed"],
                     **{k: s.get(k, 0) for k in ("total", "fresh", "aging", "stale", "expired",
                                                 "contradicted", "avg_freshness")},
                     "stale_ratio": round(ratio, 4),
                     "delta_stale_ratio": None if previous is None else round(ratio - previous, 4)})
        previous = ratio
    return {"sources": wanted or [], "runs": rows}


def report_trend(config: Config | None, overlay_path: str | None = None,
                 limit: int = DEFAULT_RUNS, source: str | None = None) -> dict:
    """The trend of the overlay that `config` (or `overlay_path`) names; see `trend_of`."""
    from memwatch_overlay.overlay.engine.audit import open_overlay
    store = open_overlay(config, overlay_path)
    try:
        return trend_of(store, limit, source)
    finally:
        store.close()


def sparkline(values: list[float]) -> str:
    """One block character per value, scaled between the smallest and largest."""
    if not values:
        return ""
    low, high = min(values), max(values)
    span = high - low
    return "".join(SPARKS[0 if span == 0 else round((v - low) / span * (len(SPARKS) - 1))]
                   for v in values)


def write_json(data: dict, out: IO[str]) -> None:
    out.write(json.dumps(data, indent=2) + "\n")


def render_table(data: dict, console: Console) -> None:
    """A table of the runs, oldest first, with the change in stale ratio and a sparkline."""
    runs = data["runs"]
    if not runs:
        console.print("No audit runs recorded in this overlay yet; run `memwatch-overlay audit` first.")
        return
    table = Table(title=f"staleness over the last {len(runs)} audit(s) of "
                        f"{', '.join(data['sources']) or 'these sources'}", header_style="bold", box=box.SIMPLE_HEAD,
                  pad_edge=False, collapse_padding=True,
                  caption="ratio = (stale+expired)/total, avg = mean freshness")
    for col in ("run", "as of", "total", "stale", "expired", "ratio", "change", "contra", "avg",
                "gate"):
        table.add_column(col, justify="left" if col in ("as of", "gate") else "right", no_wrap=True)
    dates = [r["as_of"][:10] for r in runs]
    same_day = len(set(dates)) < len(dates)
    for r in runs:
        delta = r["delta_stale_ratio"]
        change = "" if delta is None else (
            f"[red]+{delta:.1%}[/]" if delta > 0 else f"[green]{delta:.1%}[/]" if delta < 0 else "0.0%")
        gate = {True: "[green]pass[/]", False: "[red]FAIL[/]"}.get(r["passed"], "")
        when = r["as_of"][:16].replace("T", " ") if same_day else r["as_of"][:10]
        table.add_row(str(r["id"]), when, str(r["total"]), str(r["stale"]), str(r["expired"]),
                      f"{r['stale_ratio']:.1%}", change, str(r["contradicted"]),
                      f"{r['avg_freshness']:.3f}", gate)
    console.print(table)
    ratios = [r["stale_ratio"] for r in runs]
    console.print(f"stale ratio {sparkline(ratios)}  {ratios[0]:.1%} -> {ratios[-1]:.1%}")
