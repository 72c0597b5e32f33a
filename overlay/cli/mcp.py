"""`mcp`: serve the overlay to MCP clients over stdio."""
from __future__ import annotations

import click

from memwatch_overlay.overlay.cli.context import CliContext, pass_cli
from memwatch_overlay.overlay.cli.options import config_option, overlay_option


@click.command()
@config_option
@overlay_option
@click.option("--create", is_flag=True, help="Start an empty overlay when none exists (default: refuse).")
@pass_cli
def mcp(cli: CliContext, create):
    """Serve the overlay to MCP clients over stdio (needs the `mcp` extra).

    The overlay must exist (made by `audit`, `daemon` or `add`) unless --create is given.
    """
    from memwatch_overlay.overlay.mcp_server import serve
    serve(cli.config, cli.overlay_path, create=create)
