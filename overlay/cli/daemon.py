"""`daemon` (keep the overlay current beside a running bot) and `status` (how it is doing)."""
from __future__ import annotations

import click

from memwatch_overlay.core.vocab import LOG_FORMATS
from memwatch_overlay.overlay.cli.context import CliContext, pass_cli
from memwatch_overlay.overlay.cli.options import config_option, format_option, overlay_option


@click.command()
@config_option(default_here=True)
@overlay_option
@click.option("--poll", is_flag=True, help="Poll files instead of using file events (network mounts, containers).")
@click.option("--once", is_flag=True, help="One pass over every source (sync, deletion pass, rescore), then exit.")
@click.option("--log-format", type=click.Choice(list(LOG_FORMATS)), default=None,
              help="Log lines on stderr: readable text, or one JSON object per line for log shippers "
                   "(default: [daemon] log_format, else text).")
@click.option("-v", "--verbose", is_flag=True, help="Also log syncs that found nothing new.")
@pass_cli
def daemon(cli: CliContext, poll, once, log_format, verbose):
    """Watch every [[sources]] entry and keep the overlay current until SIGTERM/Ctrl-C.

    Work follows change: file events and cheap polls wake it, syncs read only what
    changed, labels are rescored as they come due. A second Ctrl-C exits at once.
    """
    import logging
    from memwatch_overlay.overlay.daemon.loop import run_daemon
    from memwatch_overlay.overlay.daemon.logs import configure
    config = cli.config_or_default("give --config F (memwatch-overlay init TARGET writes one)")
    log = configure(log_format or config.daemon.log_format, level=logging.DEBUG if verbose else logging.INFO)
    return run_daemon(config, overlay_path=cli.overlay_path, poll=poll, once=once, log=log)


@click.command()
@config_option
@overlay_option
@format_option()
@pass_cli
def status(cli: CliContext, fmt):
    """Per source: last sync, lag, rows seen, rows read by the last sync, errors."""
    from memwatch_overlay.overlay.engine.maintenance import source_status
    cli.require_overlay()
    data = source_status(cli.config, cli.overlay_path)
    if fmt == "json":
        cli.print_json(data)
        return
    from memwatch_overlay.overlay.output.listings import render_status
    render_status(data, cli.console())
