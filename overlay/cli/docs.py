"""The command reference in docs/cli.md, generated from the click commands themselves.

Regenerate after changing a command:  python -m memwatch_overlay.overlay.cli.docs > docs/cli.md
(tests/test_cli_docs.py fails while docs/cli.md is out of date).
"""
from __future__ import annotations

import click

from memwatch_overlay.overlay.cli.main import main


def _commands(group: click.Group, prefix: str):
    ctx = click.Context(group, info_name=prefix)
    for name in sorted(group.list_commands(ctx)):
        cmd = group.get_command(ctx, name)
        yield f"{prefix} {name}", cmd
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, f"{prefix} {name}")


def render() -> str:
    out = ["# Command reference", "",
           "Generated from the commands' own `--help` by "
           "`python -m memwatch_overlay.overlay.cli.docs > docs/cli.md`; do not edit by hand.", ""]
    for path, cmd in [("memwatch-overlay", main), *_commands(main, "memwatch-overlay")]:
        ctx = click.Context(cmd, info_name=path, terminal_width=80, max_content_width=80)
        out += [f"## `{path}`", "", "```", cmd.get_help(ctx).rstrip(), "```", ""]
    return "\n".join(out)


if __name__ == "__main__":
    print(render(), end="")
