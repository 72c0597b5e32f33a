"""The overlay itself: `report`, `stats`, `search`, `gc`, `export`, `import` (no source is read)."""
from __future__ import annotations

import click

from memwatch_overlay.overlay.cli.audit import check_summary_only, gate_lines, gate_status, publish_result
from memwatch_overlay.overlay.cli.context import CliContext, pass_cli
from memwatch_overlay.overlay.cli.options import (REPORT_FORMAT_CHOICES, as_of_option, config_option,
                                                  format_option, overlay_option, report_output_options,
                                                  threshold_options, thresholds)


@click.command()
@config_option
@overlay_option
@click.option("--source", "source_name", help="Only this source.")
@as_of_option
@format_option(REPORT_FORMAT_CHOICES, default=None,
               help="Report format [default: table; none when only --html or --trend is given].")
@report_output_options
@click.option("--trend", is_flag=True, help="Show how staleness moved over the last --runs audits.")
@click.option("--compact", is_flag=True,
              help="memwatch's layout for facts added with `add`: KEY, VALUE, SCORE, LABEL, DAYS LEFT.")
@click.option("--runs", "runs", type=click.IntRange(min=1), default=10, show_default=True,
              help="How many audit runs --trend (and the HTML trend chart) cover.")
@threshold_options
@pass_cli
def report(cli: CliContext, source_name, fmt, output_path, html_path, github, junit_failures, summary_only,
           trend, compact,
           runs, max_stale_ratio, max_stale, max_contradictions, min_avg_freshness):
    """Print the overlay's current state without reading any source.

    --html writes a self-contained page; --trend shows the stale ratio of recent audits
    (table or json). Exit 1 when a threshold is exceeded (not with --trend alone).
    """
    from memwatch_overlay.overlay.output.trend import report_trend
    # option combinations first: a usage error is reported the same with or without an overlay
    if compact and (fmt not in (None, "table") or trend or html_path or output_path):
        raise click.BadParameter("--compact prints a table on stdout only", param_hint="--compact")
    if trend and fmt not in (None, "table", "json"):
        raise click.BadParameter("--trend prints table or json", param_hint="--format")
    cli.require_overlay()
    if compact:
        from memwatch_overlay.overlay.output.listings import render_compact
        with cli.memwatch() as mw:
            render_compact(mw.report(), cli.console())
        return None
    config = cli.config
    history = report_trend(config, cli.overlay_path, runs, source_name) if (trend or html_path) else None
    if trend:
        assert history is not None
        _print_trend(cli, history, fmt or "table", output_path)
        if not html_path:
            return None
        fmt, output_path = None, None
    elif fmt is None and not html_path:
        fmt = "table"
    from memwatch_overlay.overlay.engine.audit import overlay_report
    result = overlay_report(config, overlay_path=cli.overlay_path, as_of=cli.as_of, source_name=source_name,
                            thresholds=thresholds(max_stale_ratio, max_stale, max_contradictions,
                                                  min_avg_freshness))
    try:
        check_summary_only(fmt, summary_only)
        publish_result(cli, result, fmt, output_path, html_path, github, trend=history,
                       junit_failures=junit_failures, summary_only=summary_only)
        gate_lines(cli, result, fmt, output_path)
        return gate_status(result)
    finally:
        result.close()


def _print_trend(cli: CliContext, history: dict, fmt: str, output_path: str | None) -> None:
    from memwatch_overlay.overlay.output.console import OutputConsole as Console
    from memwatch_overlay.overlay.output import trend as trend_mod
    out = open(output_path, "w", encoding="utf-8") if output_path else cli.stdout
    try:
        if fmt == "json":
            trend_mod.write_json(history, out)
        else:
            trend_mod.render_table(history, Console(file=out, no_color=True if out is not cli.stdout else None))
    finally:
        if out is not cli.stdout:
            out.close()


@click.command()
@config_option
@overlay_option
@format_option()
@pass_cli
def stats(cli: CliContext, fmt):
    """Counts per source, category and label in the overlay."""
    from memwatch_overlay.overlay.engine.maintenance import overlay_stats
    cli.require_overlay()
    data = overlay_stats(cli.config, cli.overlay_path)
    if fmt == "json":
        cli.print_json(data)
        return
    from memwatch_overlay.overlay.output.listings import render_stats
    render_stats(data, cli.console())


@click.command()
@click.argument("query")
@click.option("--limit", default=10, show_default=True, type=click.IntRange(min=1))
@click.option("--subject", help="Only facts about this subject.")
@click.option("--source", "source_name", help="Only facts of this source.")
@as_of_option
@format_option()
@config_option
@overlay_option
@pass_cli
def search(cli: CliContext, query, limit, subject, source_name, fmt):
    """Facts matching QUERY, ranked by relevance x freshness x confidence."""
    from memwatch_overlay.overlay.engine.search import run_search
    kwargs = {} if subject is None else {"subject": subject}
    hits = run_search(cli.config, cli.overlay_path, query, limit=limit, source=source_name,
                      as_of=cli.as_of, **kwargs)
    if fmt == "json":
        cli.print_json([h.to_dict() for h in hits], ensure_ascii=False)
        return
    from memwatch_overlay.overlay.output.tables import render_search
    render_search(hits, cli.console())


@click.command()
@click.option("--retention-days", type=click.FloatRange(min=0),
              help="Keep facts deleted in their source this many days (default [lifecycle] gc_retention_days, 30).")
@config_option
@overlay_option
@pass_cli
def gc(cli: CliContext, retention_days):
    """Prune overlay rows of facts deleted in their source longer ago than the retention period."""
    from memwatch_overlay.overlay.engine.maintenance import gc as do_gc
    data = do_gc(cli.config, cli.overlay_path, retention_days)
    cli.echo(f"pruned {data['facts_pruned']} fact(s) deleted in their source more than "
             f"{data['retention_days']:g} day(s) ago, and {data['contradictions_pruned']} contradiction(s)")


@click.command("export")
@click.argument("file", type=click.Path(dir_okay=False))
@config_option
@overlay_option
@pass_cli
def export_cmd(cli: CliContext, file):
    """Write the whole overlay to FILE as JSON lines (a backup, or to move it)."""
    from memwatch_overlay.overlay.store.backup import export_file
    cli.require_overlay()
    counts = export_file(cli.open_store(), file)
    cli.echo("exported " + ", ".join(f"{n} {kind}(s)" for kind, n in counts.items()) + f" to {file}")


@click.command("import")
@click.argument("file", type=click.Path(dir_okay=False))
@config_option
@overlay_option
@pass_cli
def import_cmd(cli: CliContext, file):
    """Load an export FILE into an empty overlay (all or nothing)."""
    from memwatch_overlay.overlay.store.backup import import_file
    counts = import_file(cli.open_store(), file)
    cli.echo("imported " + ", ".join(f"{n} {kind}(s)" for kind, n in counts.items()))
