"""Write-back: `plan` (and `plan --apply`), `undo`, `history`."""
from __future__ import annotations

import click

from memwatch_overlay.overlay.cli.context import CliContext, pass_cli
from memwatch_overlay.overlay.cli.options import as_of_option, config_option, format_option, overlay_option


@click.command()
@config_option(default_here=True, needs="[[actions]]")
@overlay_option
@click.option("--source", "source_names", multiple=True, help="Only this source (repeatable).")
@as_of_option
@click.option("--apply", "do_apply", is_flag=True,
              help="Write the planned changes to the sources and record annotations (undo restores them).")
@format_option()
@pass_cli
def plan(cli: CliContext, source_names, do_apply, fmt):
    """Show the write-back actions [[actions]] call for; write them only with --apply.

    Reads the sources (as audit does), checks every action against the live schema, and
    lists source, ref, column, old value -> new value. Without --apply nothing is written
    anywhere.
    """
    from memwatch_overlay.overlay.output import plan_tables
    from memwatch_overlay.overlay.writeback.apply import apply_plan
    from memwatch_overlay.overlay.writeback.plan import plan_actions
    config = cli.config_or_default("give --config with [[actions]]")
    the_plan = plan_actions(config, cli.as_of, overlay_path=cli.overlay_path,
                            source_names=list(source_names) or None)
    applied = apply_plan(the_plan) if do_apply else None
    if fmt == "json":
        plan_tables.write_plan_json(the_plan, cli.stdout, applied)
    else:
        plan_tables.render_plan(the_plan, cli.console(), applied)


@click.command()
@click.argument("action_ids", nargs=-1, type=click.IntRange(1, 2**63 - 1))
@click.option("--since", "since", help="Undo every action applied at or after this date/time (UTC).")
@config_option
@overlay_option
@format_option()
@pass_cli
def undo(cli: CliContext, action_ids, since, fmt):
    """Put back the rows that write-back ACTION_ID(s) (or every action --since TIME) changed.

    A row the bot changed after our write is left alone and reported as skipped.
    """
    from memwatch_overlay.core.timeparse import parse_as_of
    from memwatch_overlay.overlay.output import plan_tables
    from memwatch_overlay.overlay.writeback.undo import undo_actions
    try:
        since_at = parse_as_of(since) if since else None
    except ValueError:
        raise click.BadParameter(f"{since!r} is not a date or datetime (try 2026-11-29)",
                                 param_hint="--since") from None
    result = undo_actions(cli.config, ids=list(action_ids), since=since_at, overlay_path=cli.overlay_path)
    if fmt == "json":
        cli.print_json(result.to_dict(), ensure_ascii=False)
    else:
        plan_tables.render_undo(result, cli.console())


@click.command()
@config_option
@overlay_option
@click.option("--source", "source_name", help="Only this source.")
@click.option("--limit", type=int, default=50, show_default=True, help="How many recent actions.")
@format_option()
@pass_cli
def history(cli: CliContext, source_name, limit, fmt):
    """List recent write-back actions and annotations (ids for `undo`)."""
    from memwatch_overlay.overlay.output import plan_tables
    from memwatch_overlay.overlay.writeback.undo import action_history
    actions = action_history(cli.config, overlay_path=cli.overlay_path, limit=limit, source_name=source_name)
    if fmt == "json":
        cli.print_json(plan_tables.history_dict(actions), ensure_ascii=False)
    else:
        plan_tables.render_history(actions, cli.console())
