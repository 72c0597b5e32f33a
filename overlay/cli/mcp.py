"""`mcp`: serve the overlay to MCP clients over stdio."""
from __future__ import annotations

import click

from memwatch_overlay.overlay.cli.context import CliContext, pass_cli
from memwatch_overlay.overlay.cli.options import config_option, overlay_option


@click.command()
@config_option
@overlay_option
@pass_cli
def mcp(cli: CliContext):
    """Serve the overlay to MCP clients over stdio (needs the `mcp` extra)."""
    from memwatch_overlay.overlay.mcp_server import serve
    serve(cli.config, cli.overlay_path)
