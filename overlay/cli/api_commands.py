"""The Python API's verbs on the command line: `add`, `check`, `refresh`, `forget`."""
from __future__ import annotations

import click

from memwatch_overlay.overlay.cli.context import CliContext, pass_cli
from memwatch_overlay.overlay.cli.options import as_of_option, config_option, format_option, overlay_option


@click.command()
@click.argument("key")
@click.argument("value")
@click.option("--category", help="Category (employment, location, …); default: chosen by the rules.")
@click.option("--subject", help="User or namespace the fact is about.")
@config_option
@overlay_option
@pass_cli
def add(cli: CliContext, key, value, category, subject):
    """Store a fact KEY = VALUE in the overlay (source `memwatch`, like the Python API's add()).

    The same value again re-confirms the fact; a new value replaces the old one.
    """
    with cli.memwatch() as mw:
        memory = mw.add(key, value, category=category, subject=subject)
    cli.echo(f"added {memory.ref} ({memory.category}, freshness {memory.freshness:.2f}, "
             f"confidence {memory.confidence:.2f})")
    for ref in memory.contradicted_by:
        cli.echo(f"  contradicted by {ref}")


@click.command()
@click.argument("text")
@click.option("--subject", help="Whose memories to compare with (a user or namespace); default: all.")
@click.option("--apply", "apply_", is_flag=True,
              help="Carry out the suggestions on facts added with `add` (UPDATE sets the new value, EXPIRE erases).")
@config_option
@overlay_option
@as_of_option
@format_option()
@pass_cli
def check(cli: CliContext, text, subject, apply_, fmt):
    """Compare TEXT (something the user just said) with the overlay's memories.

    Prints the memories TEXT contradicts with a suggested UPDATE or EXPIRE for each, and
    the stale memories on the same topics. Nothing is written unless --apply is given.
    """
    from memwatch_overlay.overlay.engine.check import check_text
    config = cli.config
    result = check_text(text, config, overlay_path=cli.overlay_path, subject=subject, as_of=cli.as_of_given)
    applied = []
    if apply_:
        from memwatch_overlay.overlay.engine.added_facts import apply_to_overlay
        applied = apply_to_overlay(config, cli.overlay_path, result)
    if fmt == "json":
        cli.print_json({**result.as_dict(), "applied": applied})
        return
    from memwatch_overlay.overlay.output.listings import render_check
    render_check(result, applied, cli.console())


@click.command()
@click.argument("refs", nargs=-1)
@click.option("--subject", help="Subject of the KEYs given (facts added with --subject).")
@config_option
@overlay_option
@as_of_option
@pass_cli
def refresh(cli: CliContext, refs, subject):
    """Mark facts (by REF, or the KEY of a fact you added) as re-confirmed now.

    Their freshness restarts from 1 and their confidence from a higher start. With no REF,
    as in memwatch, recompute every fact's score now (or at --as-of); nothing is re-confirmed.
    """
    from memwatch_overlay.overlay.engine import maintenance
    if not refs:
        cli.require_overlay()
        n = maintenance.rescore_all(cli.config, cli.overlay_path, cli.as_of)
        cli.echo(f"rescored {n} fact(s)")
        return
    n = maintenance.refresh(cli.config, cli.overlay_path, list(refs), subject=subject, now=cli.as_of_given)
    cli.echo(f"refreshed {n} fact(s)")


@click.command()
@click.argument("refs", nargs=-1)
@click.option("--source", "source_name", help="Forget every fact of this source.")
@click.option("--subject", help="Subject of the KEYs given (facts added with --subject).")
@config_option
@overlay_option
@pass_cli
def forget(cli: CliContext, refs, source_name, subject):
    """Drop facts (by REF, e.g. bot:agent_facts:42, or by the KEY of a fact you added) from reports.

    The source is not touched: a forgotten fact stays hidden until its content changes
    there. A fact added with `add` is erased (the overlay is its only store).
    """
    from memwatch_overlay.overlay.engine.maintenance import forget as do_forget
    n = do_forget(cli.config, cli.overlay_path, list(refs), source_name, subject)
    cli.echo(f"forgot {n} fact(s)")
