"""Command line: click parsing and rich printing only; the work is in library functions."""
from __future__ import annotations

import functools
import sys
import time

import click
from rich.console import Console

from memwatch_overlay.rules.config import Config, load_config
from memwatch_overlay.overlay.output import tables as output
from memwatch_overlay.core.errors import ExitStatus, MemwatchError
from memwatch_overlay.core.timeparse import parse_as_of
from memwatch_overlay.core.vocab import LIST_FORMATS, REPORT_FORMATS as REPORT_FORMAT_NAMES

FORMATS = list(LIST_FORMATS)                  # stats, status, report --trend
REPORT_FORMATS = list(REPORT_FORMAT_NAMES)   # audit, report


def handle_errors(fn):
    """Domain errors become `Error: <one line>` on stderr and exit code 2; no traceback."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except MemwatchError as exc:
            click.echo(f"Error: {exc}", err=True)
            if exc.hint:
                click.echo(exc.hint, err=True)
            sys.exit(int(exc.exit_status))
        except KeyboardInterrupt:
            click.echo("Interrupted.", err=True)
            sys.exit(int(ExitStatus.INTERRUPTED))
    return wrapper


def _config(path: str | None) -> Config | None:
    return load_config(path) if path else None


def _as_of(value: str | None) -> float:
    try:
        return parse_as_of(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a date or datetime (try 2026-11-29)", param_hint="--as-of")


def _stdout(output_path: str | None):
    return open(output_path, "w", encoding="utf-8") if output_path else sys.stdout


class _Progress:
    """A rich progress line on stderr, shown only when a scan takes more than a moment."""

    DELAY = 0.7

    def __init__(self):
        self.started = time.monotonic()
        self.progress = None
        self.task = None

    def __call__(self, source: str, n: int) -> None:
        if self.progress is None:
            if time.monotonic() - self.started < self.DELAY:
                return
            from rich.progress import Progress, SpinnerColumn, TextColumn
            self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"),
                                     console=Console(stderr=True), transient=True)
            self.progress.start()
            self.task = self.progress.add_task("")
        self.progress.update(self.task, description=f"reading {source}: {n:,} records")

    def stop(self):
        if self.progress is not None:
            self.progress.stop()


def _publish(result, fmt, output_path, html_path, github, trend=None) -> None:
    from memwatch_overlay.overlay.output.publish import Streams, publish
    notes = publish(result, fmt, Streams(sys.stdout, sys.stderr), output_path=output_path,
                    html_path=html_path, github=github, trend=trend)
    for note in notes:
        click.echo(note, err=True)


def _thresholds(max_stale_ratio, max_stale, max_contradictions, min_avg_freshness) -> dict:
    return {"max_stale_ratio": max_stale_ratio, "max_stale": max_stale,
            "max_contradictions": max_contradictions, "min_avg_freshness": min_avg_freshness}


def output_options(fn):
    fn = click.option("--github/--no-github", "github", default=True, show_default=True,
                      help="Under GitHub Actions (GITHUB_ACTIONS=true): annotations and a job summary.")(fn)
    fn = click.option("--html", "html_path", type=click.Path(dir_okay=False),
                      help="Also write a self-contained HTML report here.")(fn)
    fn = click.option("--output", "output_path", type=click.Path(dir_okay=False),
                      help="Write the report here instead of stdout.")(fn)
    return fn


overlay_option = click.option(
    "--overlay", "--db", "overlay_path", type=click.Path(dir_okay=False),
    help="Overlay database file or postgresql:// DSN (the Python API's db=); default [overlay] in the config, "
         "else .memwatch/overlay.db beside the config, or here.")
config_option = click.option("--config", "config_path", type=click.Path(dir_okay=False), help="memwatch.toml to use.")


def _overlay_file(config: Config | None, overlay_path: str | None) -> str:
    from memwatch_overlay.overlay.engine.audit import overlay_target
    return overlay_target(config, overlay_path)


def _memwatch(config_path: str | None, overlay_path: str | None, subject: str | None = None):
    from memwatch_overlay.overlay.api import MemWatch
    config = _config(config_path)
    return MemWatch(db=_overlay_file(config, overlay_path), config=config, subject=subject)


def threshold_options(fn):
    """Gate flags; each overrides the same key of [ci] (not the [ci.categories.*] / [ci.sources.*] tables)."""
    fn = click.option("--min-avg-freshness", type=click.FloatRange(0, 1),
                      help="Fail (exit 1) when the average freshness is below this.")(fn)
    fn = click.option("--max-contradictions", type=click.IntRange(min=0),
                      help="Fail (exit 1) above this many contradicted facts.")(fn)
    fn = click.option("--max-stale", type=click.IntRange(min=0),
                      help="Fail (exit 1) above this many stale + expired facts.")(fn)
    fn = click.option("--max-stale-ratio", type=click.FloatRange(0, 1),
                      help="Fail (exit 1) when (stale + expired) / total is above this.")(fn)
    return fn


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="memwatch-overlay")
def main():
    """memwatch-overlay: freshness scores, expiry and contradiction flags for an agent's memory store.

    Reads the store read-only and keeps its findings in a separate overlay database.
    """


@main.command()
@click.argument("target", required=False)
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="memwatch.toml to use.")
@click.option("--source", "source_name", help="With --config and TARGET: which [[sources]] entry TARGET is.")
@click.option("--as-of", "as_of", help="Score as if now were this date/time (UTC), for reproducible audits.")
@click.option("--format", "fmt", type=click.Choice(REPORT_FORMATS), default="table", show_default=True)
@output_options
@click.option("--overlay", "overlay_path", type=click.Path(dir_okay=False),
              help="Overlay database file or postgresql:// DSN (default [overlay] in the config, else "
                   ".memwatch/overlay.db beside the config, or in the current folder).")
@threshold_options
@handle_errors
def audit(target, config_path, source_name, as_of, fmt, output_path, html_path, github, overlay_path,
          max_stale_ratio, max_stale, max_contradictions, min_avg_freshness):
    """Score every memory of TARGET (a SQLite/JSON/JSONL file, a LanceDB folder, a postgresql:// DSN,
    or a folder of stores: each recognised store its own source) once.

    Exit 0 when the gate passes, 1 when a threshold is exceeded, 2 on bad input.
    """
    from memwatch_overlay.overlay.engine.audit import audit as run_audit
    progress = _Progress()
    try:
        result = run_audit(target, _config(config_path), as_of=_as_of(as_of), overlay_path=overlay_path,
                           source_name=source_name,
                           thresholds=_thresholds(max_stale_ratio, max_stale, max_contradictions,
                                                  min_avg_freshness),
                           on_progress=progress)
    finally:
        progress.stop()
    try:
        for stat in result.stats:
            for w in stat.warnings[:5]:
                click.echo(f"warning: {stat.source}: {w}", err=True)
        _publish(result, fmt, output_path, html_path, github)
        _gate_lines(result, fmt, output_path)
        sys.exit(int(ExitStatus.OK if result.passed else ExitStatus.GATE_FAILED))
    finally:
        result.close()


def _gate_lines(result, fmt, output_path) -> None:
    """One line per violated threshold on stderr, unless the table on stdout shows them."""
    if fmt == "table" and not output_path:
        return
    for v in result.violations:
        click.echo(f"gate: {v.message}", err=True)


@main.command()
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="memwatch.toml to use.")
@overlay_option
@click.option("--source", "source_name", help="Only this source.")
@click.option("--as-of", "as_of", help="Score as if now were this date/time (UTC).")
@click.option("--format", "fmt", type=click.Choice(REPORT_FORMATS),
              help="Report format [default: table; none when only --html or --trend is given].")
@output_options
@click.option("--trend", is_flag=True, help="Show how staleness moved over the last --runs audits.")
@click.option("--runs", "runs", type=click.IntRange(min=1), default=10, show_default=True,
              help="How many audit runs --trend (and the HTML trend chart) cover.")
@threshold_options
@handle_errors
def report(config_path, overlay_path, source_name, as_of, fmt, output_path, html_path, github, trend, runs,
           max_stale_ratio, max_stale, max_contradictions, min_avg_freshness):
    """Print the overlay's current state without reading any source.

    --html writes a self-contained page; --trend shows the stale ratio of recent audits
    (table or json). Exit 1 when a threshold is exceeded (not with --trend alone).
    """
    from memwatch_overlay.overlay.output.trend import report_trend
    config = _config(config_path)
    history = report_trend(config, overlay_path, runs, source_name) if (trend or html_path) else None
    if trend:
        if fmt not in (None, "table", "json"):
            raise click.BadParameter("--trend prints table or json", param_hint="--format")
        _print_trend(history, fmt or "table", output_path)
        if not html_path:
            return
        fmt, output_path = None, None
    elif fmt is None and not html_path:
        fmt = "table"
    from memwatch_overlay.overlay.engine.audit import overlay_report
    result = overlay_report(config, overlay_path=overlay_path, as_of=_as_of(as_of),
                            source_name=source_name,
                            thresholds=_thresholds(max_stale_ratio, max_stale, max_contradictions,
                                                   min_avg_freshness))
    try:
        _publish(result, fmt, output_path, html_path, github, trend=history)
        _gate_lines(result, fmt, output_path)
        sys.exit(int(ExitStatus.OK if result.passed else ExitStatus.GATE_FAILED))
    finally:
        result.close()


def _print_trend(history: dict, fmt: str, output_path: str | None) -> None:
    from memwatch_overlay.overlay.output import trend as trend_mod
    out = _stdout(output_path)
    try:
        if fmt == "json":
            trend_mod.write_json(history, out)
        else:
            trend_mod.render_table(history, Console(file=out, no_color=out is not sys.stdout))
    finally:
        if out is not sys.stdout:
            out.close()


@main.command()
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="memwatch.toml to use.")
@overlay_option
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@handle_errors
def stats(config_path, overlay_path, fmt):
    """Counts per source, category and label in the overlay."""
    import json as _json
    from memwatch_overlay.overlay.engine.maintenance import overlay_stats
    data = overlay_stats(_config(config_path), overlay_path)
    if fmt == "json":
        click.echo(_json.dumps(data, indent=2))
        return
    from rich.table import Table
    table = Table(title=f"overlay {data['overlay']}")
    for col in ("group", "total", "fresh", "aging", "stale", "expired", "contradicted", "deleted", "avg"):
        table.add_column(col)
    for kind in ("by_source", "by_category"):
        for name, s in data[kind].items():
            table.add_row(f"{kind[3:]} {name}", *(str(s[k]) for k in ("total", "fresh", "aging", "stale",
                                                                      "expired", "contradicted", "deleted")),
                          f"{s['avg_freshness']:.2f}")
    Console().print(table)


@main.command()
@click.argument("refs", nargs=-1)
@click.option("--source", "source_name", help="Forget every fact of this source.")
@click.option("--subject", help="Subject of the KEYs given (facts added with --subject).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="memwatch.toml to use.")
@overlay_option
@handle_errors
def forget(refs, source_name, subject, config_path, overlay_path):
    """Drop facts (by REF, e.g. bot:agent_facts:42, or by the KEY of a fact you added) from reports.

    The source is not touched: a forgotten fact stays hidden until its content changes
    there. A fact added with `add` is erased (the overlay is its only store).
    """
    from memwatch_overlay.overlay.engine.maintenance import forget as do_forget
    n = do_forget(_config(config_path), overlay_path, list(refs), source_name, subject)
    click.echo(f"forgot {n} fact(s)")


@main.command()
@click.argument("refs", nargs=-1, required=True)
@click.option("--subject", help="Subject of the KEYs given (facts added with --subject).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="memwatch.toml to use.")
@overlay_option
@handle_errors
def refresh(refs, subject, config_path, overlay_path):
    """Mark facts (by REF, or the KEY of a fact you added) as re-confirmed now.

    Their freshness restarts from 1 and their confidence from a higher start.
    """
    from memwatch_overlay.overlay.engine.maintenance import refresh as do_refresh
    n = do_refresh(_config(config_path), overlay_path, list(refs), subject=subject)
    click.echo(f"refreshed {n} fact(s)")


@main.command()
@click.option("--config", "config_path", type=click.Path(dir_okay=False),
              help="memwatch.toml to use (default: ./memwatch.toml).")
@click.option("--overlay", "overlay_path", type=click.Path(dir_okay=False), help="Overlay database.")
@click.option("--poll", is_flag=True, help="Poll files instead of using file events (network mounts, containers).")
@click.option("--once", is_flag=True, help="One pass over every source (sync, deletion pass, rescore), then exit.")
@click.option("--log-format", type=click.Choice(["text", "json"]), default=None,
              help="Log lines on stderr: readable text, or one JSON object per line for log shippers "
                   "(default: [daemon] log_format, else text).")
@click.option("-v", "--verbose", is_flag=True, help="Also log syncs that found nothing new.")
@handle_errors
def daemon(config_path, overlay_path, poll, once, log_format, verbose):
    """Watch every [[sources]] entry and keep the overlay current until SIGTERM/Ctrl-C.

    Work follows change: file events and cheap polls wake it, syncs read only what
    changed, labels are rescored as they come due. A second Ctrl-C exits at once.
    """
    import logging
    from memwatch_overlay.overlay.daemon.loop import run_daemon
    from memwatch_overlay.overlay.daemon.logs import configure
    config = load_config(config_path or _default_config())
    log = configure(log_format or config.daemon.log_format, level=logging.DEBUG if verbose else logging.INFO)
    sys.exit(run_daemon(config, overlay_path=overlay_path, poll=poll, once=once, log=log))


def _default_config() -> str:
    from pathlib import Path
    from memwatch_overlay.core.errors import ConfigError
    if Path("memwatch.toml").is_file():
        return "memwatch.toml"
    raise ConfigError("no memwatch.toml here; give --config F (memwatch-overlay init TARGET writes one)",
                      field="--config")


@main.command()
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="memwatch.toml to use.")
@overlay_option
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@handle_errors
def status(config_path, overlay_path, fmt):
    """Per source: last sync, lag, rows seen, rows read by the last sync, errors."""
    import json as _json
    from memwatch_overlay.overlay.engine.maintenance import source_status
    data = source_status(_config(config_path), overlay_path)
    if fmt == "json":
        click.echo(_json.dumps(data, indent=2))
        return
    from rich.table import Table
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
    Console().print(table)


@main.command()
@click.argument("key")
@click.argument("value")
@click.option("--category", help="Category (employment, location, …); default: chosen by the rules.")
@click.option("--subject", help="User or namespace the fact is about.")
@config_option
@overlay_option
@handle_errors
def add(key, value, category, subject, config_path, overlay_path):
    """Store a fact KEY = VALUE in the overlay (source `memwatch`, like the Python API's add()).

    The same value again re-confirms the fact; a new value replaces the old one.
    """
    with _memwatch(config_path, overlay_path) as mw:
        memory = mw.add(key, value, category=category, subject=subject)
    click.echo(f"added {memory.ref} ({memory.category}, freshness {memory.freshness:.2f}, "
               f"confidence {memory.confidence:.2f})")
    for ref in memory.contradicted_by:
        click.echo(f"  contradicted by {ref}")


@main.command()
@click.argument("query")
@click.option("--limit", default=10, show_default=True, type=click.IntRange(min=1))
@click.option("--subject", help="Only facts about this subject.")
@click.option("--source", "source_name", help="Only facts of this source.")
@click.option("--as-of", "as_of", help="Score as if now were this date/time (UTC).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@config_option
@overlay_option
@handle_errors
def search(query, limit, subject, source_name, as_of, fmt, config_path, overlay_path):
    """Facts matching QUERY, ranked by relevance x freshness x confidence."""
    import json as _json
    from memwatch_overlay.overlay.engine.search import run_search
    kwargs = {} if subject is None else {"subject": subject}
    hits = run_search(_config(config_path), overlay_path, query, limit=limit, source=source_name,
                      as_of=_as_of(as_of), **kwargs)
    if fmt == "json":
        click.echo(_json.dumps([h.to_dict() for h in hits], indent=2, ensure_ascii=False))
        return
    output.render_search(hits, Console())


@main.command()
@click.option("--retention-days", type=click.FloatRange(min=0),
              help="Keep facts deleted in their source this many days (default [lifecycle] gc_retention_days, 30).")
@config_option
@overlay_option
@handle_errors
def gc(retention_days, config_path, overlay_path):
    """Prune overlay rows of facts deleted in their source longer ago than the retention period."""
    from memwatch_overlay.overlay.engine.maintenance import gc as do_gc
    data = do_gc(_config(config_path), overlay_path, retention_days)
    click.echo(f"pruned {data['facts_pruned']} fact(s) deleted in their source more than "
               f"{data['retention_days']:g} day(s) ago, and {data['contradictions_pruned']} contradiction(s)")


@main.command("export")
@click.argument("file", type=click.Path(dir_okay=False))
@config_option
@overlay_option
@handle_errors
def export_cmd(file, config_path, overlay_path):
    """Write the whole overlay to FILE as JSON lines (a backup, or to move it)."""
    from memwatch_overlay.overlay.store.backup import export_file
    with open_overlay_cli(config_path, overlay_path) as store:
        counts = export_file(store, file)
    click.echo("exported " + ", ".join(f"{n} {kind}(s)" for kind, n in counts.items()) + f" to {file}")


@main.command("import")
@click.argument("file", type=click.Path(dir_okay=False))
@config_option
@overlay_option
@handle_errors
def import_cmd(file, config_path, overlay_path):
    """Load an export FILE into an empty overlay (all or nothing)."""
    from memwatch_overlay.overlay.store.backup import import_file
    with open_overlay_cli(config_path, overlay_path) as store:
        counts = import_file(store, file)
    click.echo("imported " + ", ".join(f"{n} {kind}(s)" for kind, n in counts.items()))


@main.command()
@config_option
@overlay_option
@handle_errors
def mcp(config_path, overlay_path):
    """Serve the overlay to MCP clients over stdio (needs the `mcp` extra)."""
    from memwatch_overlay.overlay.mcp_server import serve
    serve(_config(config_path), overlay_path)


def open_overlay_cli(config_path: str | None, overlay_path: str | None):
    from memwatch_overlay.overlay.engine.audit import open_overlay
    return open_overlay(_config(config_path), overlay_path)


@main.command()
@click.argument("text")
@click.option("--subject", help="Whose memories to compare with (a user or namespace); default: all.")
@click.option("--apply", "apply_", is_flag=True,
              help="Carry out the suggestions on facts added with `add` (UPDATE sets the new value, EXPIRE erases).")
@config_option
@overlay_option
@click.option("--as-of", "as_of", help="Judge staleness as if now were this date/time (UTC).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@handle_errors
def check(text, subject, apply_, config_path, overlay_path, as_of, fmt):
    """Compare TEXT (something the user just said) with the overlay's memories.

    Prints the memories TEXT contradicts with a suggested UPDATE or EXPIRE for each, and
    the stale memories on the same topics. Nothing is written unless --apply is given.
    """
    import json as _json
    from memwatch_overlay.overlay.engine.check import check_text
    config = _config(config_path)
    result = check_text(text, config, overlay_path=overlay_path, subject=subject,
                        as_of=_as_of(as_of) if as_of else None)
    applied = []
    if apply_:
        from memwatch_overlay.overlay.engine.added_facts import apply_to_overlay
        applied = apply_to_overlay(config, overlay_path, result)
    if fmt == "json":
        click.echo(_json.dumps({**result.as_dict(), "applied": applied}, indent=2))
        return
    console = Console()
    if result.contradictions:
        from rich.table import Table
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


@main.group()
def sources():
    """Inspect stores: which known agent-framework layouts a target matches."""


@sources.command("detect")
@click.argument("target")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@handle_errors
def sources_detect(target, fmt):
    """List the presets that match TARGET (a SQLite/JSON/JSONL file or a postgresql:// DSN) and why.

    Best match first; that is the one a zero-config `audit TARGET` and `init TARGET` use.
    """
    import json as _json
    from memwatch_overlay.connectors.recognize import detect, mapping_snippet
    from memwatch_overlay.core.redact import redact_dsn
    det = detect(target)
    if fmt == "json":
        click.echo(_json.dumps({
            "target": redact_dsn(det.target), "kind": det.kind,
            "tables": [{"name": t.name, "columns": t.columns, "pk": t.pk} for t in det.tables],
            "matches": [{"preset": m.preset, "score": m.score, "reasons": m.reasons, "mapping": m.defaults}
                        for m in det.matches]}, indent=2))
        return
    console = Console()
    console.print(f"[bold]{redact_dsn(det.target)}[/bold] ({det.kind})", highlight=False)
    seen = "; ".join(f"{t.name}({', '.join(t.columns)})" for t in det.tables[:20]) or "nothing"
    console.print(f"seen: {seen}", highlight=False, markup=False)
    if not det.matches:
        console.print("no preset matches; map the store in memwatch.toml:", highlight=False)
        console.print(mapping_snippet(det), highlight=False, markup=False)
        return
    for i, m in enumerate(det.matches, 1):
        mark = "  (used by audit and init)" if i == 1 else ""
        console.print(f"{i}. [bold]{m.preset}[/bold] score {m.score:.2f}{mark}", highlight=False)
        for reason in m.reasons:
            console.print(f"   - {reason}", highlight=False, markup=False)
        if m.defaults:
            mapping = ", ".join(f"{k} = {v!r}" for k, v in m.defaults.items())
            console.print(f"   maps: {mapping}", highlight=False, markup=False)


@main.command("connectors")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@handle_errors
def connectors_cmd(fmt):
    """List connectors and presets, and where each came from (built-in or plugin)."""
    import json as _json
    from memwatch_overlay.connectors.registry import catalog
    data = catalog()
    if fmt == "json":
        click.echo(_json.dumps(data, indent=2))
        return
    from rich.table import Table
    console = Console()
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


@main.command()
@click.argument("target")
@click.option("--output", "output_path", type=click.Path(dir_okay=False), default="memwatch.toml",
              show_default=True, help="Where to write the config.")
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
@handle_errors
def init(target, output_path, force):
    """Write a commented memwatch.toml for the store TARGET holds (detected as `audit` does;
    a folder: one [[sources]] entry per recognised store).

    Fed back with `audit --config`, it audits exactly what `audit TARGET` does.
    """
    from memwatch_overlay.overlay.engine.init_config import init_config
    result = init_config(target, output_path, force=force)
    if len(result.sources) > 1:
        click.echo(f"wrote {result.path}: {len(result.sources)} sources, "
                   + ", ".join(f"{s.name!r} ({s.preset or s.connector})" for s in result.sources))
    else:
        click.echo(f"wrote {result.path}: source {result.source.name!r}, "
                   f"{result.source.preset or result.detection.matches[0].preset} ({result.detection.kind})")
    if result.password_dropped:
        click.echo("note: the DSN's password was not written; set PGPASSWORD or use dsn_env", err=True)


def _plan_config(path: str | None) -> Config:
    """plan/undo need the [[actions]] of a memwatch.toml: --config, else ./memwatch.toml."""
    import os
    if path is None and os.path.exists("memwatch.toml"):
        path = "memwatch.toml"
    if path is None:
        from memwatch_overlay.core.errors import ConfigError
        raise ConfigError("no memwatch.toml here; give --config with [[actions]]", field="--config")
    return load_config(path)


@main.command()
@click.option("--config", "config_path", type=click.Path(dir_okay=False),
              help="memwatch.toml with [[actions]] (default ./memwatch.toml).")
@click.option("--overlay", "overlay_path", type=click.Path(dir_okay=False), help="Overlay database file or postgresql:// DSN.")
@click.option("--source", "source_names", multiple=True, help="Only this source (repeatable).")
@click.option("--as-of", "as_of", help="Score as if now were this date/time (UTC).")
@click.option("--apply", "do_apply", is_flag=True,
              help="Write the planned changes to the sources and record annotations (undo restores them).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@handle_errors
def plan(config_path, overlay_path, source_names, as_of, do_apply, fmt):
    """Show the write-back actions [[actions]] call for; write them only with --apply.

    Reads the sources (as audit does), checks every action against the live schema, and
    lists source, ref, column, old value -> new value. Without --apply nothing is written
    anywhere.
    """
    from memwatch_overlay.overlay.output import plan_tables as plan_output
    from memwatch_overlay.overlay.writeback.apply import apply_plan
    from memwatch_overlay.overlay.writeback.plan import plan_actions
    cfg = _plan_config(config_path)
    the_plan = plan_actions(cfg, _as_of(as_of), overlay_path=overlay_path,
                            source_names=list(source_names) or None)
    applied = apply_plan(the_plan) if do_apply else None
    if fmt == "json":
        plan_output.write_plan_json(the_plan, sys.stdout, applied)
    else:
        plan_output.render_plan(the_plan, Console(), applied)


@main.command()
@click.argument("action_ids", nargs=-1, type=int)
@click.option("--since", "since", help="Undo every action applied at or after this date/time (UTC).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="memwatch.toml to use.")
@click.option("--overlay", "overlay_path", type=click.Path(dir_okay=False), help="Overlay database file or postgresql:// DSN.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@handle_errors
def undo(action_ids, since, config_path, overlay_path, fmt):
    """Put back the rows that write-back ACTION_ID(s) (or every action --since TIME) changed.

    A row the bot changed after our write is left alone and reported as skipped.
    """
    import json as _json
    from memwatch_overlay.overlay.output import plan_tables as plan_output
    from memwatch_overlay.overlay.writeback.undo import undo_actions
    cfg = _config(config_path)
    result = undo_actions(cfg, ids=list(action_ids), since=_as_of(since) if since else None,
                          overlay_path=overlay_path)
    if fmt == "json":
        click.echo(_json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    else:
        plan_output.render_undo(result, Console())


@main.command()
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="memwatch.toml to use.")
@click.option("--overlay", "overlay_path", type=click.Path(dir_okay=False), help="Overlay database file or postgresql:// DSN.")
@click.option("--source", "source_name", help="Only this source.")
@click.option("--limit", type=int, default=50, show_default=True, help="How many recent actions.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@handle_errors
def history(config_path, overlay_path, source_name, limit, fmt):
    """List recent write-back actions and annotations (ids for `undo`)."""
    import json as _json
    from memwatch_overlay.overlay.output import plan_tables as plan_output
    from memwatch_overlay.overlay.writeback.undo import action_history
    actions = action_history(_config(config_path), overlay_path=overlay_path, limit=limit,
                             source_name=source_name)
    if fmt == "json":
        click.echo(_json.dumps(plan_output.history_dict(actions), indent=2, ensure_ascii=False))
    else:
        plan_output.render_history(actions, Console())


if __name__ == "__main__":
    main()
