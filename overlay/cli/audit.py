"""`audit`: score a store once and apply the CI gate (exit 1 when a threshold is exceeded)."""
from __future__ import annotations

import click

from memwatch_overlay.core.errors import ExitStatus
from memwatch_overlay.overlay.cli.context import CliContext, pass_cli
from memwatch_overlay.overlay.cli.options import (REPORT_FORMAT_CHOICES, as_of_option, config_option,
                                                  format_option, overlay_option, report_output_options,
                                                  threshold_options, thresholds)


@click.command()
@click.argument("target", required=False)
@config_option
@click.option("--source", "source_name", help="With --config and TARGET: which [[sources]] entry TARGET is.")
@as_of_option
@format_option(REPORT_FORMAT_CHOICES)
@report_output_options
@overlay_option
@threshold_options
@pass_cli
def audit(cli: CliContext, target, source_name, fmt, output_path, html_path, github, junit_failures, summary_only,
          max_stale_ratio, max_stale, max_contradictions, min_avg_freshness):
    """Score every memory of TARGET (a SQLite/JSON/JSONL file, a LanceDB folder, a postgresql:// DSN,
    a folder of stores: each recognised store its own source, or - for JSON Lines on stdin) once.

    Exit 0 when the gate passes, 1 when a threshold is exceeded, 2 on bad input.
    """
    from memwatch_overlay.overlay.engine.audit import audit as run_audit
    from memwatch_overlay.overlay.output.progress import ScanProgress
    if target == "-":
        target = spool_stdin(cli)
    progress = ScanProgress(enabled=not cli.quiet)
    check_summary_only(fmt, summary_only)
    try:
        result = run_audit(target, cli.config, as_of=cli.as_of, overlay_path=cli.overlay_path,
                           source_name=source_name,
                           thresholds=thresholds(max_stale_ratio, max_stale, max_contradictions,
                                                 min_avg_freshness),
                           on_progress=progress)
    except BaseException:
        progress.stop()
        raise
    try:
        # the line stays up while the report is written, unless the report is drawn on the
        # same terminal (stdout a tty, no --output)
        if output_path or html_path or not _isatty(cli.stdout):
            progress.set_phase("writing report")
        else:
            progress.stop()
        try:
            publish_result(cli, result, fmt, output_path, html_path, github, junit_failures=junit_failures,
                           summary_only=summary_only)
        finally:
            progress.stop()
        for stat in result.stats:
            for w in stat.warnings[:5]:
                cli.warn(f"warning: {stat.source}: {w}")
        gate_lines(cli, result, fmt, output_path)
        return gate_status(result)
    finally:
        result.close()


STDIN_SPOOL = "stdin.jsonl"


def spool_stdin(cli: CliContext) -> str:
    """`audit -`: copy stdin (JSON Lines) to stdin.jsonl beside the overlay and audit that file.

    A fixed place, so every `... | memwatch-overlay audit -` updates the same source (`stdin`):
    facts keep their first-seen times and a vanished line counts as a deletion.
    """
    import shutil
    import sys
    from pathlib import Path
    from memwatch_overlay.overlay.engine.audit import overlay_target
    from memwatch_overlay.overlay.store.postgres_dialect import is_dsn
    target = overlay_target(cli.config, cli.overlay_path)
    folder = Path(".memwatch") if is_dsn(target) else Path(target).resolve().parent
    folder.mkdir(parents=True, exist_ok=True)
    spool = folder / STDIN_SPOOL
    tmp = spool.with_suffix(".jsonl.part")
    with open(tmp, "wb") as out:
        shutil.copyfileobj(sys.stdin.buffer, out, 1 << 20)
    tmp.replace(spool)
    return str(spool)


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def check_summary_only(fmt, summary_only: bool) -> None:
    if summary_only and fmt != "json":
        raise click.BadParameter("--summary-only goes with --format json", param_hint="--summary-only")


def gate_status(result) -> ExitStatus:
    return ExitStatus.OK if result.passed else ExitStatus.GATE_FAILED


def publish_result(cli: CliContext, result, fmt, output_path, html_path, github, trend=None,
                   junit_failures: str = "gate", summary_only: bool = False) -> None:
    """The report in `fmt` on stdout (or --output), the side outputs, and a note per file written."""
    from memwatch_overlay.overlay.output.publish import Streams, publish
    notes = publish(result, fmt, Streams(cli.stdout, cli.stderr), output_path=output_path,
                    html_path=html_path, github=github, trend=trend, junit_failures=junit_failures,
                    summary_only=summary_only)
    for note in notes:
        cli.warn(note)


def gate_lines(cli: CliContext, result, fmt, output_path) -> None:
    """One line per violated threshold on stderr, unless the table on stdout shows them."""
    if fmt == "table" and not output_path:
        return
    for v in result.violations:
        cli.warn(f"gate: {v.message}")
