"""Options shared by several commands, each declared once (sqlite-utils' `output_options`).

`--config`, `--overlay` (alias `--db`) and `--as-of` fill this invocation's CliContext
instead of becoming arguments; `--format` and `--output` are ordinary arguments (`fmt`,
`output_path`) whose choices come from the one vocabulary.
"""
from __future__ import annotations

import click

from memwatch_overlay.core.vocab import LIST_FORMATS, REPORT_FORMATS
from memwatch_overlay.core.timeparse import parse_as_of
from memwatch_overlay.overlay.cli.context import current

FORMATS = list(LIST_FORMATS)              # stats, status, report --trend, ...
REPORT_FORMAT_CHOICES = list(REPORT_FORMATS)   # audit, report

CONFIG_HELP = "memwatch.toml to use"
OVERLAY_HELP = ("Overlay database file or postgresql:// DSN (the Python API's db=); default [overlay] in the "
                "config, else .memwatch/overlay.db beside the config, or here.")
AS_OF_HELP = "Score as if now were this date/time (UTC), for reproducible results."


def _set(attr: str):
    def callback(ctx: click.Context, param: click.Parameter, value):
        if value is not None:
            setattr(current(ctx), attr, value)
        return value
    return callback


def _check_as_of(ctx: click.Context, param: click.Parameter, value):
    if value is None:
        return None
    try:
        parse_as_of(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a date or datetime (try 2026-11-29)") from None
    setattr(current(ctx), "as_of_text", value)
    return value


def config_option(fn=None, *, default_here: bool = False, needs: str | None = None):
    """--config F; `default_here`: the command falls back to ./memwatch.toml; `needs`: what it must hold."""
    help_text = CONFIG_HELP
    if needs:
        help_text += f", with {needs}"
    help_text += " (default: ./memwatch.toml)." if default_here else "."

    def decorate(f):
        return click.option("--config", "config_path", type=click.Path(dir_okay=False), help=help_text,
                            expose_value=False, callback=_set("config_path"))(f)
    return decorate(fn) if fn is not None else decorate


def overlay_option(fn):
    """--overlay / --db: every command that opens an overlay takes both spellings."""
    return click.option("--overlay", "--db", "overlay_path", type=click.Path(dir_okay=False), help=OVERLAY_HELP,
                        expose_value=False, callback=_set("overlay_path"))(fn)


QUIET_HELP = "Print nothing on stderr but errors: no progress, notes, warnings or gate lines (the exit code says it)."


def _set_quiet(ctx: click.Context, param: click.Parameter, value):
    if value:
        current(ctx).quiet = True
    return value


def quiet_option(fn):
    """-q / --quiet: on the group (before the command) and on the commands that talk on stderr."""
    return click.option("-q", "--quiet", is_flag=True, expose_value=False, callback=_set_quiet,
                        help=QUIET_HELP)(fn)


def as_of_option(fn):
    return click.option("--as-of", "as_of", help=AS_OF_HELP, expose_value=False, callback=_check_as_of)(fn)


def format_option(choices=FORMATS, default: str | None = "table", help: str | None = None):
    """--format, from the one vocabulary's list (listing formats unless told otherwise)."""
    def decorate(fn):
        return click.option("--format", "fmt", type=click.Choice(list(choices)), default=default,
                            show_default=default is not None and help is None, help=help)(fn)
    return decorate


def output_option(default: str | None = None, help: str = "Write the report here instead of stdout."):
    def decorate(fn):
        return click.option("--output", "output_path", type=click.Path(dir_okay=False), default=default,
                            show_default=default is not None, help=help)(fn)
    return decorate


def report_output_options(fn):
    """--output, --html, --github/--no-github, --junit-failures and --summary-only: where an
    audit result goes, and how."""
    fn = click.option("--summary-only", is_flag=True,
                      help="--format json: the summary, gate and per-category/per-source counts, without "
                           "the facts and contradictions (for very large stores).")(fn)
    fn = quiet_option(fn)
    fn = click.option("--junit-failures", type=click.Choice(["gate", "facts"]), default="gate", show_default=True,
                      help="--format junit: what fails: only the gate's test case (as the exit code), or also "
                           "each category holding stale, expired or contradicted facts.")(fn)
    fn = click.option("--github/--no-github", "github", default=True, show_default=True,
                      help="Under GitHub Actions (GITHUB_ACTIONS=true): annotations and a job summary.")(fn)
    fn = click.option("--html", "html_path", type=click.Path(dir_okay=False),
                      help="Also write a self-contained HTML report here.")(fn)
    return output_option()(fn)


def threshold_options(fn):
    """Gate flags; each overrides the same key of [ci] (not the [ci.categories.*] / [ci.sources.*] tables)."""
    fn = click.option("--min-avg-freshness", type=click.FloatRange(0, 1),
                      help="Fail (exit 1) when the average freshness is below this.")(fn)
    fn = click.option("--max-contradictions", type=click.IntRange(min=0),
                      help="Fail (exit 1) above this many contradicted facts.")(fn)
    fn = click.option("--max-stale", type=click.IntRange(min=0),
                      help="Fail (exit 1) above this many stale + expired facts.")(fn)
    fn = click.option("--max-stale-ratio", type=click.FloatRange(0, 1),
                      help="Fail (exit 1) when (stale + expired) / total is above this.")(fn)
    return fn


def thresholds(max_stale_ratio=None, max_stale=None, max_contradictions=None, min_avg_freshness=None) -> dict:
    """The gate flags as the engine's `thresholds` mapping."""
    return {"max_stale_ratio": max_stale_ratio, "max_stale": max_stale,
            "max_contradictions": max_contradictions, "min_avg_freshness": min_avg_freshness}
