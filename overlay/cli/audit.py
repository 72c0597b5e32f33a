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
def audit(cli: CliContext, target, source_name, fmt, output_path, html_path, github, junit_failures,
          max_stale_ratio, max_stale, max_contradictions, min_avg_freshness):
    """Score every memory of TARGET (a SQLite/JSON/JSONL file, a LanceDB folder, a postgresql:// DSN,
    or a folder of stores: each recognised store its own source) once.

    Exit 0 when the gate passes, 1 when a threshold is exceeded, 2 on bad input.
    """
    from memwatch_overlay.overlay.engine.audit import audit as run_audit
    from memwatch_overlay.overlay.output.progress import ScanProgress
    progress = ScanProgress()
    try:
        result = run_audit(target, cli.config, as_of=cli.as_of, overlay_path=cli.overlay_path,
                           source_name=source_name,
                           thresholds=thresholds(max_stale_ratio, max_stale, max_contradictions,
                                                 min_avg_freshness),
                           on_progress=progress)
    finally:
        progress.stop()
    try:
        for stat in result.stats:
            for w in stat.warnings[:5]:
                cli.warn(f"warning: {stat.source}: {w}")
        publish_result(cli, result, fmt, output_path, html_path, github, junit_failures=junit_failures)
        gate_lines(cli, result, fmt, output_path)
        return gate_status(result)
    finally:
        result.close()


def gate_status(result) -> ExitStatus:
    return ExitStatus.OK if result.passed else ExitStatus.GATE_FAILED


def publish_result(cli: CliContext, result, fmt, output_path, html_path, github, trend=None,
                   junit_failures: str = "gate") -> None:
    """The report in `fmt` on stdout (or --output), the side outputs, and a note per file written."""
    from memwatch_overlay.overlay.output.publish import Streams, publish
    notes = publish(result, fmt, Streams(cli.stdout, cli.stderr), output_path=output_path,
                    html_path=html_path, github=github, trend=trend, junit_failures=junit_failures)
    for note in notes:
        cli.warn(note)


def gate_lines(cli: CliContext, result, fmt, output_path) -> None:
    """One line per violated threshold on stderr, unless the table on stdout shows them."""
    if fmt == "table" and not output_path:
        return
    for v in result.violations:
        cli.warn(f"gate: {v.message}")
