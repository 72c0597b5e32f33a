"""Which store is this? `sources detect`, `init` (write a memwatch.toml for it), `connectors`."""
from __future__ import annotations

import click

from memwatch_overlay.overlay.cli.context import CliContext, pass_cli
from memwatch_overlay.overlay.cli.options import format_option, output_option


@click.group()
def sources():
    """Inspect stores: which known agent-framework layouts a target matches."""


@sources.command("detect")
@click.argument("target")
@format_option()
@pass_cli
def sources_detect(cli: CliContext, target, fmt):
    """List the presets that match TARGET (a SQLite/JSON/JSONL file or a postgresql:// DSN) and why.

    Best match first; that is the one a zero-config `audit TARGET` and `init TARGET` use.
    """
    from memwatch_overlay.connectors.recognize import detect, mapping_snippet
    from memwatch_overlay.overlay.output.listings import detection_dict, render_detection
    det = detect(target)
    if fmt == "json":
        cli.print_json(detection_dict(det))
        return
    render_detection(det, cli.console(), snippet=None if det.matches else mapping_snippet(det))


@click.command("connectors")
@format_option()
@pass_cli
def connectors_cmd(cli: CliContext, fmt):
    """List connectors and presets, and where each came from (built-in or plugin)."""
    from memwatch_overlay.connectors.registry import catalog
    data = catalog()
    if fmt == "json":
        cli.print_json(data)
        return
    from memwatch_overlay.overlay.output.listings import render_catalog
    render_catalog(data, cli.console())


@click.command()
@click.argument("target")
@output_option(default="memwatch.toml", help="Where to write the config.")
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
@pass_cli
def init(cli: CliContext, target, output_path, force):
    """Write a commented memwatch.toml for the store TARGET holds (detected as `audit` does;
    a folder: one [[sources]] entry per recognised store).

    Fed back with `audit --config`, it audits exactly what `audit TARGET` does.
    """
    from memwatch_overlay.overlay.engine.init_config import init_config
    result = init_config(target, output_path, force=force)
    if len(result.sources) > 1:
        cli.echo(f"wrote {result.path}: {len(result.sources)} sources, "
                 + ", ".join(f"{s.name!r} ({s.preset or s.connector})" for s in result.sources))
    else:
        cli.echo(f"wrote {result.path}: source {result.source.name!r}, "
                 f"{result.source.preset or result.detection.matches[0].preset} ({result.detection.kind})")
    if result.password_dropped:
        cli.warn("note: the DSN's password was not written; set PGPASSWORD or use dsn_env")
