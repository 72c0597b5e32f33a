"""Command line: click parsing and rich printing only; the work is in library functions."""
from __future__ import annotations

import functools
import sys
import time

import click
from rich.console import Console

from ..rules.config import Config, load_config
from . import output
from .errors import ExitStatus, MemwatchError
from .timeparse import parse_as_of

FORMATS = ["table", "json"]


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


def _emit(result, fmt: str, output_path: str | None) -> None:
    out = _stdout(output_path)
    try:
        if fmt == "json":
            output.write_json(result, out)
        else:
            console = Console(file=out, width=None if out is sys.stdout else 160,
                              no_color=out is not sys.stdout)
            output.render_table(result, console)
    finally:
        if out is not sys.stdout:
            out.close()


def threshold_options(fn):
    fn = click.option("--max-contradictions", type=int, help="Fail (exit 1) above this many contradicted facts.")(fn)
    fn = click.option("--max-stale", type=int, help="Fail (exit 1) above this many stale + expired facts.")(fn)
    fn = click.option("--max-stale-ratio", type=float, help="Fail (exit 1) when (stale + expired) / total is above this.")(fn)
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
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("--output", "output_path", type=click.Path(dir_okay=False), help="Write the report here instead of stdout.")
@click.option("--overlay", "overlay_path", type=click.Path(dir_okay=False),
              help="Overlay database (default .memwatch/overlay.db beside the config, or in the current folder).")
@threshold_options
@handle_errors
def audit(target, config_path, source_name, as_of, fmt, output_path, overlay_path,
          max_stale_ratio, max_stale, max_contradictions):
    """Score every memory of TARGET (a SQLite/JSON/JSONL file or a postgresql:// DSN) once.

    Exit 0 when the gate passes, 1 when a threshold is exceeded, 2 on bad input.
    """
    from .audit import audit as run_audit
    progress = _Progress()
    try:
        result = run_audit(target, _config(config_path), as_of=_as_of(as_of), overlay_path=overlay_path,
                           source_name=source_name,
                           thresholds={"max_stale_ratio": max_stale_ratio, "max_stale": max_stale,
                                       "max_contradictions": max_contradictions},
                           on_progress=progress)
    finally:
        progress.stop()
    try:
        for stat in result.stats:
            for w in stat.warnings[:5]:
                click.echo(f"warning: {stat.source}: {w}", err=True)
        _emit(result, fmt, output_path)
        sys.exit(int(ExitStatus.OK if result.passed else ExitStatus.GATE_FAILED))
    finally:
        result.close()


@main.command()
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="memwatch.toml to use.")
@click.option("--overlay", "overlay_path", type=click.Path(dir_okay=False), help="Overlay database.")
@click.option("--source", "source_name", help="Only this source.")
@click.option("--as-of", "as_of", help="Score as if now were this date/time (UTC).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("--output", "output_path", type=click.Path(dir_okay=False), help="Write the report here.")
@threshold_options
@handle_errors
def report(config_path, overlay_path, source_name, as_of, fmt, output_path,
           max_stale_ratio, max_stale, max_contradictions):
    """Print the overlay's current state without reading any source."""
    from .audit import overlay_report
    result = overlay_report(_config(config_path), overlay_path=overlay_path, as_of=_as_of(as_of),
                            source_name=source_name,
                            thresholds={"max_stale_ratio": max_stale_ratio, "max_stale": max_stale,
                                        "max_contradictions": max_contradictions})
    try:
        _emit(result, fmt, output_path)
        sys.exit(int(ExitStatus.OK if result.passed else ExitStatus.GATE_FAILED))
    finally:
        result.close()


@main.command()
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="memwatch.toml to use.")
@click.option("--overlay", "overlay_path", type=click.Path(dir_okay=False), help="Overlay database.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@handle_errors
def stats(config_path, overlay_path, fmt):
    """Counts per source, category and label in the overlay."""
    import json as _json
    from .maintenance import overlay_stats
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
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="memwatch.toml to use.")
@click.option("--overlay", "overlay_path", type=click.Path(dir_okay=False), help="Overlay database.")
@handle_errors
def forget(refs, source_name, config_path, overlay_path):
    """Drop facts (by REF, e.g. bot:agent_facts:42) from reports; the source is not touched.

    A forgotten fact stays hidden until its content changes in the source.
    """
    from .maintenance import forget as do_forget
    n = do_forget(_config(config_path), overlay_path, list(refs), source_name)
    click.echo(f"forgot {n} fact(s)")


@main.command()
@click.argument("refs", nargs=-1, required=True)
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="memwatch.toml to use.")
@click.option("--overlay", "overlay_path", type=click.Path(dir_okay=False), help="Overlay database.")
@handle_errors
def refresh(refs, config_path, overlay_path):
    """Mark facts (by REF) as re-confirmed now: their freshness restarts from 1."""
    from .maintenance import refresh as do_refresh
    n = do_refresh(_config(config_path), overlay_path, list(refs))
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
    from .daemon import run_daemon
    from .logs import configure
    config = load_config(config_path or _default_config())
    log = configure(log_format or config.daemon.log_format, level=logging.DEBUG if verbose else logging.INFO)
    sys.exit(run_daemon(config, overlay_path=overlay_path, poll=poll, once=once, log=log))


def _default_config() -> str:
    from pathlib import Path
    from .errors import ConfigError
    if Path("memwatch.toml").is_file():
        return "memwatch.toml"
    raise ConfigError("no memwatch.toml here; give --config F (memwatch-overlay init TARGET writes one)",
                      field="--config")


@main.command()
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="memwatch.toml to use.")
@click.option("--overlay", "overlay_path", type=click.Path(dir_okay=False), help="Overlay database.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@handle_errors
def status(config_path, overlay_path, fmt):
    """Per source: last sync, lag, rows seen, rows read by the last sync, errors."""
    import json as _json
    from .maintenance import source_status
    data = source_status(_config(config_path), overlay_path)
    if fmt == "json":
        click.echo(_json.dumps(data, indent=2))
        return
    from rich.table import Table
    d = data.get("daemon") or {}
    title = (f"daemon running (pid {d['pid']}, heartbeat {d['heartbeat']})" if d.get("running")
             else "no daemon running")
    table = Table(title=title)
    for col in ("source", "last sync", "lag (s)", "rows seen", "rows read last sync", "errors", "last error"):
        table.add_column(col)
    for s in data["sources"]:
        table.add_row(s["name"], s["last_sync"] or "never",
                      "" if s["lag_seconds"] is None else f"{s['lag_seconds']:.0f}",
                      str(s["rows_seen"]), str(s["rows_read_last_sync"]), str(s["errors"]), s["last_error"] or "")
    Console().print(table)


if __name__ == "__main__":
    main()
