"""Tables of the listing commands: status, stats, check, sources detect, connectors.

Library code never prints: each renderer draws on the console it is given.
"""
from __future__ import annotations

from rich.console import Console
from rich.table import Table

from memwatch_overlay.core.redact import redact_dsn

STAT_COLUMNS = ("total", "fresh", "aging", "stale", "expired", "contradicted", "deleted")


def render_status(data: dict, console: Console) -> None:
    """`status`: who is running, then one row per source."""
    d = data.get("daemon") or {}
    fleet = [m for m in data.get("daemons") or [] if m["alive"]]
    if fleet:
        title = (f"{len(fleet)} daemons running: " if len(fleet) > 1 else "daemon running: ") + "; ".join(
            f"pid {m['pid']} on {m['host']} ({', '.join(m['sources']) or 'no sources'})" for m in fleet)
    elif d.get("running"):
        title = f"daemon running (pid {d['pid']}, heartbeat {d['heartbeat']})"
    else:
        title = "no daemon running"
    table = Table(title=title)
    for col in ("source", "last sync", "lag (s)", "rows seen", "rows read last sync", "errors", "last error"):
        table.add_column(col)
    for s in data["sources"]:
        table.add_row(s["name"], s["last_sync"] or "never",
                      "" if s["lag_seconds"] is None else f"{s['lag_seconds']:.0f}",
                      str(s["rows_seen"]), str(s["rows_read_last_sync"]), str(s["errors"]), s["last_error"] or "")
    console.print(table)


def render_stats(data: dict, console: Console) -> None:
    """`stats`: counts per source and per category."""
    table = Table(title=f"overlay {data['overlay']}")
    for col in ("group", *STAT_COLUMNS, "avg"):
        table.add_column(col)
    for kind in ("by_source", "by_category"):
        for name, s in data[kind].items():
            table.add_row(f"{kind[3:]} {name}", *(str(s[k]) for k in STAT_COLUMNS), f"{s['avg_freshness']:.2f}")
    console.print(table)


def render_check(result, applied: list[str], console: Console) -> None:
    """`check TEXT`: the contradicted memories with their suggestions, the stale ones, the closing line."""
    if result.contradictions:
        table = Table(title="contradicted memories")
        for col in ("action", "memory", "key", "old value", "new value", "why"):
            table.add_column(col, overflow="fold")
        for c in result.contradictions:
            u = c["update"]
            table.add_row(u.get("action", ""), c["older"], u.get("key") or "", str(u.get("old_value") or ""),
                          "" if u.get("new_value") is None else str(u["new_value"]),
                          f"{c['kind']} {c['confidence']:.2f}: {c['evidence']}")
        console.print(table)
    for s in result.stale:
        console.print(f"stale: {s['ref']} ({s['label']}, freshness {s['freshness']:.2f}): {s['text']}",
                      markup=False, highlight=False)
    for ref in applied:
        console.print(f"applied: {ref}", markup=False, highlight=False)
    console.print(result.line, markup=False, highlight=False)


def detection_dict(det) -> dict:
    """`sources detect --format json`: what was seen and which presets match (DSN password redacted)."""
    return {"target": redact_dsn(det.target), "kind": det.kind,
            "tables": [{"name": t.name, "columns": t.columns, "pk": t.pk} for t in det.tables],
            "matches": [{"preset": m.preset, "score": m.score, "reasons": m.reasons, "mapping": m.defaults}
                        for m in det.matches]}


def render_detection(det, console: Console, snippet: str | None = None) -> None:
    """`sources detect`: what was seen, then the matching presets best first, or `snippet`
    (a memwatch.toml mapping to fill in) when none matches."""
    console.print(f"[bold]{redact_dsn(det.target)}[/bold] ({det.kind})", highlight=False)
    seen = "; ".join(f"{t.name}({', '.join(t.columns)})" for t in det.tables[:20]) or "nothing"
    console.print(f"seen: {seen}", highlight=False, markup=False)
    if not det.matches:
        console.print("no preset matches; map the store in memwatch.toml:", highlight=False)
        console.print(snippet or "", highlight=False, markup=False)
        return
    for i, m in enumerate(det.matches, 1):
        mark = "  (used by audit and init)" if i == 1 else ""
        console.print(f"{i}. [bold]{m.preset}[/bold] score {m.score:.2f}{mark}", highlight=False)
        for reason in m.reasons:
            console.print(f"   - {reason}", highlight=False, markup=False)
        if m.defaults:
            mapping = ", ".join(f"{k} = {v!r}" for k, v in m.defaults.items())
            console.print(f"   maps: {mapping}", highlight=False, markup=False)


def render_catalog(data: dict, console: Console) -> None:
    """`connectors`: the connectors and presets, each with where it came from."""
    table = Table(title="connectors")
    for col in ("name", "description", "origin", "status"):
        table.add_column(col)
    for c in data["connectors"]:
        table.add_row(c["name"], c["description"], c["origin"], "ok" if c["available"] else c["note"])
    console.print(table)
    table = Table(title="presets")
    for col in ("name", "kind", "description", "origin", "status"):
        table.add_column(col)
    for p in data["presets"]:
        table.add_row(p["name"], p["kind"], p["description"], p["origin"], "ok" if p["available"] else p["note"])
    console.print(table)


def render_compact(memories, console: Console) -> None:
    """`report --compact`: memwatch's own layout for the facts added through the API."""
    from memwatch_overlay.overlay.output.tables import LABEL_STYLES
    if not memories:
        console.print("no facts added with `add` (or the Python API) in this overlay")
        return
    table = Table(header_style="bold")
    table.add_column("KEY", no_wrap=True)
    table.add_column("VALUE", overflow="fold")
    table.add_column("SCORE", justify="right", no_wrap=True)
    table.add_column("LABEL", no_wrap=True)
    table.add_column("DAYS LEFT", justify="right", no_wrap=True)
    for m in memories:
        style = LABEL_STYLES.get(m.label, "")
        left = "never" if m.days_left is None else f"{m.days_left:,.0f}"
        key = m.key if not m.subject else f"{m.subject}/{m.key}"
        table.add_row(key or m.ref, m.value, f"{m.freshness:.2f}", f"[{style}]{m.label}[/]", left)
    console.print(table)
