"""Table (rich) and JSON renderings of an audit result. Library code never prints:
these write to the stream or console they are given."""
from __future__ import annotations

import json
import re
from typing import IO

from rich.console import Console
from rich.panel import Panel
from rich.table import Table

LABEL_STYLES = {"fresh": "green", "aging": "yellow", "stale": "dark_orange", "expired": "red"}
MAX_TABLE_ROWS = 200
_UUIDISH = re.compile(r"^[0-9a-f]{8}-|^[0-9a-f]{16,}$|^\d+$", re.I)


def write_json(result, out: IO[str]) -> None:
    """The design's JSON contract, streamed fact by fact (bounded memory)."""
    header = result.header()
    out.write("{")
    for key, value in header.items():
        out.write(f"{json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}, ")
    out.write('"facts": [')
    for i, fact in enumerate(result.iter_facts()):
        out.write(("," if i else "") + "\n  " + json.dumps(fact, ensure_ascii=False))
    out.write('\n], "contradictions": [')
    for i, item in enumerate(result.contradictions()):
        out.write(("," if i else "") + "\n  " + json.dumps(item, ensure_ascii=False))
    out.write("\n]}\n")


def _fmt_days(value) -> str:
    if value is None:
        return "never"
    return f"{value:,.0f}d" if value >= 1 else f"{value * 24:.0f}h"


def render_table(result, console: Console, limit: int = MAX_TABLE_ROWS) -> None:
    """A summary box, then facts stalest first (like the seed's `memwatch report`)."""
    s = result.summary
    total = s["total"] or 1
    lines = [
        f"[bold]{s['total']}[/] facts in {len(result.sources)} source(s) as of {result.header()['as_of']}",
        "  ".join(f"[{LABEL_STYLES[k]}]{k} {s[k]} ({s[k] / total:.0%})[/]"
                  for k in ("fresh", "aging", "stale", "expired")),
        f"contradicted {s['contradicted']}   average freshness {s['avg_freshness']:.2f}"
        + (f"   deleted in source {s['deleted']}" if s.get("deleted") else ""),
    ]
    if result.thresholds:
        verdict = "[green]gate passed[/]" if result.passed else "[red]gate FAILED[/]"
        lines.append(verdict + "  " + ", ".join(f"{k}={v}" for k, v in result.thresholds.items()))
    console.print(Panel("\n".join(lines), title="memwatch-overlay audit", expand=False))
    for v in result.violations:
        console.print(f"[red]✗ {v.message}[/]")

    table = Table(show_lines=False, header_style="bold")
    for col, kw in (("subject", {"max_width": 14}), ("memory", {"min_width": 20}),
                    ("category", {}), ("score", {"justify": "right"}), ("label", {}),
                    ("left", {"justify": "right"})):
        table.add_column(col, overflow="ellipsis", no_wrap=col != "memory", **kw)
    shown = 0
    for fact in result.iter_facts(order="f.status = 'deleted', f.freshness, f.id"):
        if shown >= limit:
            break
        text = fact["text"]
        if fact["key"] and len(fact["key"]) <= 24 and not _UUIDISH.match(fact["key"]):
            text = f"{fact['key']}: {text}"
        text = text if len(text) <= 70 else text[:67] + "…"
        style = LABEL_STYLES.get(fact["label"], "")
        table.add_row(fact["subject"] or "", text, fact["category"],
                      f"{fact['freshness']:.2f}",
                      f"[{style}]{fact['label']}[/]" + ("" if fact["status"] == "active" else f" ({fact['status']})"),
                      _fmt_days(fact["days_left"]))
        shown += 1
    console.print(table)
    remaining = s["total"] + s.get("deleted", 0) - shown
    if remaining > 0:
        console.print(f"… {remaining} more (use --format json for all)")
