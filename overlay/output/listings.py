"""Tables of the listing commands: status, stats, check, sources detect, connectors.

Library code never prints: each renderer draws on the console it is given.
"""
from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table

from memwatch_overlay.core.redact import redact_dsn
from memwatch_overlay.core.tomltext import toml_value

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
    # at 80 columns (a CI log) names, times and counts stay whole; only the last error wraps
    table = Table(title=title, box=box.SIMPLE_HEAD)
    table.add_column("source", no_wrap=True)
    table.add_column("last sync (UTC)", no_wrap=True)
    for col in ("lag", "rows seen", "read last sync", "errors"):
        table.add_column(col, justify="right", no_wrap=False)
    table.add_column("last error", overflow="fold", ratio=1)
    for s in data["sources"]:
        table.add_row(s["name"], short_time(s["last_sync"]),
                      "" if s["lag_seconds"] is None else duration(s["lag_seconds"]),
                      f"{s['rows_seen']:,}", f"{s['rows_read_last_sync']:,}", str(s["errors"]), s["last_error"] or "")
    console.print(table)


def short_time(iso: str | None) -> str:
    """`2026-12-01T12:19:02.5+00:00` -> `2026-12-01 12:19:02` (the status table says UTC once).

    Example:
        >>> short_time("2026-12-01T12:19:02.512+00:00"), short_time(None)
        ('2026-12-01 12:19:02', 'never')
    """
    if not iso:
        return "never"
    return iso.replace("T", " ")[:19]


def duration(seconds: float) -> str:
    """A lag in the largest whole unit that keeps it short: `42s`, `17m`, `5h`, `3d`.

    Example:
        >>> duration(42), duration(1020), duration(18000), duration(3 * 86400)
        ('42s', '17m', '5.0h', '3.0d')
    """
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    if seconds < 172800:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


def render_stats(data: dict, console: Console) -> None:
    """`stats`: counts per source and per category."""
    console.print(f"overlay {data['overlay']}", highlight=False, markup=False, soft_wrap=True)
    headers = {"contradicted": "contra-\ndicted"}       # the one long header wraps, never a name or count
    for kind in ("by_source", "by_category"):
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
        table.add_column(kind[3:], no_wrap=True)
        for col in STAT_COLUMNS:
            table.add_column(headers.get(col, col), justify="right", no_wrap=True)
        table.add_column("avg", justify="right", no_wrap=True)
        for name, s in data[kind].items():
            table.add_row(name, *(f"{s[k]:,}" for k in STAT_COLUMNS), f"{s['avg_freshness']:.2f}")
        console.print(table)


def render_check(result, applied: list[str], console: Console) -> None:
    """`check TEXT`: the contradicted memories with their suggestions, the stale ones, the closing line."""
    if result.contradictions:
        # the memory's own text (its ref is in --format json; a key-value memory, whose text is the
        # old value, shows its ref); action and key stay whole
        table = Table(title="contradicted memories")
        for col in ("action", "memory", "key", "old value", "new value", "why"):
            table.add_column(col, overflow="fold", no_wrap=col in ("action", "key"))
        for c in result.contradictions:
            u = c["update"]
            text = c.get("older_text")
            memory = text if text and text != u.get("old_value") else c["older"]   # key-value: the ref says more
            table.add_row(u.get("action", ""), memory, u.get("key") or "",
                          str(u.get("old_value") or ""),
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
    seen = "; ".join(f"{t.name}({', '.join(t.columns)})" for t in det.tables[:20]) or "nothing"
    if not det.matches:
        # the whole output is a TOML file: what was seen as comments, then the entry, printed
        # as is (console.out never wraps at the terminal's width: a wrapped comment or quoted
        # path is no longer TOML), so `sources detect X > memwatch.toml` parses
        for line in (f"{redact_dsn(det.target)} ({det.kind})", f"seen: {seen}",
                     "no preset matches; map the store in memwatch.toml:"):
            console.out("# " + line.replace("\n", " "), highlight=False)
        console.out(snippet or "", highlight=False)
        return
    console.print(f"[bold]{redact_dsn(det.target)}[/bold] ({det.kind})", highlight=False)
    console.print(f"seen: {seen}", highlight=False, markup=False)
    for i, m in enumerate(det.matches, 1):
        mark = "  (used by audit and init)" if i == 1 else ""
        console.print(f"{i}. [bold]{m.preset}[/bold] score {m.score:.2f}{mark}", highlight=False)
        for reason in m.reasons:
            console.print(f"   - {reason}", highlight=False, markup=False)
        if m.defaults:
            mapping = ", ".join(f"{k} = {toml_value(v)}" for k, v in m.defaults.items())
            console.print(f"   maps: {mapping}", highlight=False, markup=False, soft_wrap=True)


def render_catalog(data: dict, console: Console) -> None:
    """`connectors`: the connectors and presets, each with where it came from."""
    hints: list[str] = []

    def status(row) -> str:
        if row["available"]:
            return "ok"
        hints.append(f"{row['name']}: {row['note']}")
        return f"missing [{len(hints)}]"

    def origin(row) -> str:           # the module path is in --format json
        return row["origin"].split(" (", 1)[0]

    table = Table(title="connectors", box=box.SIMPLE_HEAD)
    table.add_column("name", no_wrap=True)
    table.add_column("description", ratio=1)
    table.add_column("origin", no_wrap=True)
    table.add_column("status", no_wrap=True)
    for c in data["connectors"]:
        table.add_row(c["name"], c["description"], origin(c), status(c))
    console.print(table)
    table = Table(title="presets", box=box.SIMPLE_HEAD)
    for col in ("name", "kind"):
        table.add_column(col, no_wrap=True)
    table.add_column("description", ratio=1)
    table.add_column("origin", no_wrap=True)
    table.add_column("status", no_wrap=True)
    for p in data["presets"]:
        table.add_row(p["name"], p["kind"], p["description"], origin(p), status(p))
    console.print(table)
    # install hints whole, on lines of their own (a wrapped `pip install ...` cannot be pasted)
    for i, hint in enumerate(hints, 1):
        console.out(f"[{i}] {hint}", highlight=False)


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
