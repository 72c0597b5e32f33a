"""Table (rich) and JSON renderings of an audit result. Library code never prints:
these write to the stream or console they are given."""
from __future__ import annotations

import json
import re
from typing import IO

from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from memwatch_overlay.core import fastjson as jsontext

LABEL_STYLES = {"fresh": "green", "aging": "yellow", "stale": "dark_orange", "expired": "red"}
MAX_TABLE_ROWS = 200
STATUS_MARKS = {"contradicted": " *", "deleted": " †"}
_UUIDISH = re.compile(r"^[0-9a-f]{8}-|^[0-9a-f]{16,}$|^\d+$", re.I)


def write_json(result, out: IO[str], summary_only: bool = False) -> None:
    """The design's JSON contract, streamed (bounded memory): one fact or contradiction a
    line, written WRITE_BATCH lines at a time. `summary_only`: the header (summary, gate,
    sources) plus `by_category` and `by_source`, no facts or contradictions, and
    `"summary_only": true`."""
    header = result.header()
    if summary_only:
        data = {**header, "by_category": result.by("category"), "by_source": result.by("source"),
                "summary_only": True}
        out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        return
    out.write("{")
    for key, value in header.items():
        out.write(f"{json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}, ")
    out.write('"facts": [')
    # an audit result hands the facts over as JSON text (the same text, without a dict each)
    fact_lines = getattr(result, "iter_fact_lines", None)
    _write_lines(out, fact_lines() if fact_lines is not None else map(_encode, result.iter_facts()))
    out.write('\n], "contradictions": [')
    _write_lines(out, map(_encode, result.contradictions()))
    out.write("\n]}\n")


WRITE_BATCH = 1000   # a write() per fact costs about as much as encoding it
_encode = jsontext.encoder()


def _write_lines(out: IO[str], lines) -> None:
    """JSON texts, each on its own line after a comma (none before the first)."""
    lead, batch = "\n  ", []
    for line in lines:
        batch.append(line)
        if len(batch) >= WRITE_BATCH:
            out.write(lead + ",\n  ".join(batch))
            lead = ",\n  "
            batch.clear()
    if batch:
        out.write(lead + ",\n  ".join(batch))


def _time_left(fact: dict) -> str:
    """Fresh facts: time until they stop being fresh; older ones: until they expire."""
    if fact["label"] == "fresh":
        return _fmt_days(fact["days_left"])
    if fact["label"] == "expired":
        return "-"
    return "exp " + _fmt_days(fact["days_until_expired"])


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
    elif getattr(result, "gate", None) == "none":
        lines.append("[dim]no gate configured[/] (set \\[ci] thresholds in memwatch.toml or --max-stale-ratio)")
    console.print(Panel("\n".join(lines), title="memwatch-overlay audit", expand=False))
    for v in result.violations:
        console.print(f"[red]✗ {v.message}[/]")

    # at 80 columns only the memory text gives way (it wraps); subject, category, label and
    # time left stay whole
    table = Table(show_lines=False, header_style="bold")
    for col, kw in (("subject", {}), ("memory", {"min_width": 16, "ratio": 1}),
                    ("category", {}), ("score", {"justify": "right"}), ("label", {}),
                    ("left", {"justify": "right"})):
        table.add_column(col, overflow="fold" if col == "memory" else "ellipsis", no_wrap=col != "memory", **kw)
    shown = 0
    for fact in result.iter_table_facts(limit):
        text = fact["text"]
        if fact["key"] and len(fact["key"]) <= 24 and not _UUIDISH.match(fact["key"]):
            text = f"{fact['key']}: {text}"
        text = text if len(text) <= 70 else text[:67] + "…"
        style = LABEL_STYLES.get(fact["label"], "")
        table.add_row(fact["subject"] or "", text, fact["category"],
                      f"{fact['freshness']:.2f}",
                      f"[{style}]{fact['label']}[/]" + STATUS_MARKS.get(fact["status"], ""),
                      _time_left(fact))
        shown += 1
    console.print(table)
    console.print("* contradicted by a newer memory   † deleted in the source", style="dim")
    remaining = s["total"] + s.get("deleted", 0) - shown
    if remaining > 0:
        console.print(f"… {remaining} more (use --format json for all)")


def render_search(hits, console: Console) -> None:
    if not hits:
        console.print("no matching facts")
        return
    table = Table(header_style="bold")
    for col, kw in (("score", {"justify": "right"}), ("ref", {"max_width": 30}), ("memory", {"min_width": 20}),
                    ("freshness", {"justify": "right"}), ("confidence", {"justify": "right"}), ("label", {})):
        table.add_column(col, overflow="ellipsis", **kw)
    for h in hits:
        f = h.fact
        style = LABEL_STYLES.get(f["label"], "")
        table.add_row(f"{h.score:.3f}", f["ref"], f"{f['key']}: {f['text']}" if f["key"] else f["text"],
                      f"{f['freshness']:.2f}", f"{(f['confidence'] if f['confidence'] is not None else 1):.2f}",
                      f"[{style}]{f['label']}[/]")
    console.print(table)
