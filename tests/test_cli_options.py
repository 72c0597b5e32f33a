"""Shared options are declared once (overlay/cli/options.py) and mean the same on every command."""
from __future__ import annotations

import ast
from pathlib import Path

import click

from memwatch_overlay.overlay.cli import options
from memwatch_overlay.overlay.cli.main import main

CLI = Path(__file__).resolve().parents[1] / "overlay" / "cli"
SHARED = ("--config", "--overlay", "--db", "--as-of", "--format", "--output")


def every_command(group: click.Group = main, prefix: str = ""):
    for name, cmd in group.commands.items():
        yield f"{prefix}{name}", cmd
        if isinstance(cmd, click.Group):
            yield from every_command(cmd, f"{prefix}{name} ")


def option(cmd: click.Command, flag: str) -> click.Option | None:
    return next((p for p in cmd.params if isinstance(p, click.Option) and flag in p.opts), None)


def test_shared_flags_are_declared_only_in_options_py():
    for path in sorted(CLI.glob("*.py")):
        if path.name == "options.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "option":
                flags = [a.value for a in node.args if isinstance(a, ast.Constant)]
                shared = set(flags) & set(SHARED)
                assert not shared, f"{path.name}:{node.lineno}: {shared} declared outside options.py"


def test_no_command_catches_errors_itself():
    """One choke point (errors.run_guarded): no per-command error decorator is left."""
    for path in sorted(CLI.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert "handle_errors" not in text, path.name
        if path.name != "errors.py":
            assert "sys.exit" not in text or path.name == "main.py", f"{path.name} exits by itself"


def test_every_overlay_option_has_both_spellings_and_one_help():
    seen = []
    for name, cmd in every_command():
        opt = option(cmd, "--overlay")
        if opt is None:
            assert option(cmd, "--db") is None, name
            continue
        assert opt.opts == ["--overlay", "--db"], name
        assert opt.help == options.OVERLAY_HELP, name
        seen.append(name)
    assert {"audit", "report", "status", "stats", "daemon", "plan", "undo", "history", "check", "mcp"} <= set(seen)


def test_config_and_as_of_read_the_same_everywhere():
    for name, cmd in every_command():
        config = option(cmd, "--config")
        if config is not None:
            assert config.help.startswith(options.CONFIG_HELP), name
        as_of = option(cmd, "--as-of")
        if as_of is not None:
            assert as_of.help == options.AS_OF_HELP, name
