"""The `memwatch-overlay` group: one file per command family, one error choke point.

Commands live beside this file (audit.py, daemon.py, writeback.py, api_commands.py,
maintenance.py, sources.py, mcp.py); options shared by several are in options.py, the
per-invocation context in context.py, and the mapping from exceptions to exit codes in
errors.py. `main` is both the console script's entry point and the click group.
"""
from __future__ import annotations

import sys

import click

from memwatch_overlay.overlay.cli import api_commands, audit, daemon, maintenance, mcp, sources, writeback
from memwatch_overlay.overlay.cli.context import current
from memwatch_overlay.overlay.cli.errors import TRACEBACK_ENV, StdoutClosed, run_guarded, wants_traceback
from memwatch_overlay.overlay.cli.options import FORMATS, REPORT_FORMAT_CHOICES, quiet_option
from memwatch_overlay.overlay.detect import parallel

REPORT_FORMATS = REPORT_FORMAT_CHOICES     # audit, report (kept under the old name)
__all__ = ["main", "FORMATS", "REPORT_FORMATS"]


class MemwatchGroup(click.Group):
    """A click group whose `main` runs the whole command line inside `errors.run_guarded`."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:           # a caller who handles errors itself
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        argv = sys.argv[1:] if args is None else list(args)

        def invoke():
            return super(MemwatchGroup, self).main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        # the command line walks a large sync's blocks on every core (overlay/detect/parallel.py);
        # the Python API, whose caller's main module may not be guarded, walks them in-process
        before, parallel.DEFAULT_WORKERS = parallel.DEFAULT_WORKERS, parallel.console_workers()
        try:
            code = run_guarded(invoke, traceback=wants_traceback(argv))
        finally:
            parallel.DEFAULT_WORKERS = before
        sys.exit(code)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except BrokenPipeError as exc:    # click's main would turn it into exit 1, the gate's code
            raise StdoutClosed() from exc


@click.group(cls=MemwatchGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="memwatch-overlay")
@quiet_option
@click.option("--traceback", is_flag=True, expose_value=False,
              help=f"On an unexpected error (exit 70), print the Python traceback (or set {TRACEBACK_ENV}=1).")
@click.pass_context
def main(ctx: click.Context):
    """memwatch-overlay: freshness scores, expiry and contradiction flags for an agent's memory store.

    Reads the store read-only and keeps its findings in a separate overlay database.
    """
    current(ctx)      # this invocation's CliContext, closed with the click context


for command in (audit.audit, maintenance.report, maintenance.stats, api_commands.forget, api_commands.refresh,
                daemon.daemon, daemon.status, api_commands.add, maintenance.search, maintenance.gc,
                maintenance.export_cmd, maintenance.import_cmd, mcp.mcp, api_commands.check, sources.sources,
                sources.connectors_cmd, sources.init, writeback.plan, writeback.undo, writeback.history):
    main.add_command(command)


if __name__ == "__main__":
    main()
