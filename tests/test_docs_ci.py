"""The CI and write-back docs only use commands and options the CLI has."""
import re
from pathlib import Path

import pytest

from memwatch_overlay.overlay.cli.main import main

DOCS = Path(__file__).resolve().parents[1] / "docs"
FILES = ["ci.md", "pre-commit.md", "github-actions.yml", "contradictions.md", "writeback.md", "daemon.md"]


def invocations(text):
    """(command, [--options]) for every `memwatch-overlay COMMAND ...` in `text` (line continuations joined)."""
    text = text.replace("\\\n", " ")
    for m in re.finditer(r"memwatch-overlay (\w[\w-]*)([^\n`|;]*)", text):
        yield m.group(1), re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", m.group(2))


@pytest.mark.parametrize("name", FILES)
def test_doc_commands_exist_with_their_options(name):
    found = list(invocations((DOCS / name).read_text()))
    commands = [c for c, _ in found if c in main.commands]
    assert commands, f"no memwatch-overlay command in {name}"
    for command, options in found:
        if command not in main.commands:
            continue        # prose such as "memwatch-overlay audit` exits ..."
        known = {o for p in main.commands[command].params for o in (*p.opts, *p.secondary_opts)}
        unknown = [o for o in options if o not in known]
        assert not unknown, f"{name}: {command} has no {unknown}"


def test_every_report_format_is_documented():
    text = (DOCS / "ci.md").read_text()
    fmt = next(p for p in main.commands["audit"].params if p.name == "fmt")
    for choice in fmt.type.choices:
        assert choice in text
