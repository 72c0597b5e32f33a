"""docs/cli.md is the commands' own help, regenerated; every command is in it."""
from pathlib import Path

from memwatch_overlay.overlay.cli import docs as clidoc
from memwatch_overlay.overlay.cli.main import main

DOC = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def test_every_command_is_documented():
    text = DOC.read_text()
    for name in main.commands:
        assert f"## `memwatch-overlay {name}`" in text, f"{name} missing from docs/cli.md"


def test_reference_is_up_to_date():
    assert DOC.read_text() == clidoc.render(), \
        "docs/cli.md is stale: python -m memwatch_overlay.overlay.cli.docs > docs/cli.md"
