"""The package's layers, enforced: nothing imports upward (DESIGN.md, "Layout").

cli / api / mcp_server / integrations
  -> daemon / writeback / output
  -> engine / detect
  -> overlay store / connectors
  -> rules
  -> core (the leaf: imports nothing of ours)

Every `import` and `from ... import` of every module is read with `ast` (function-level
imports included: a lazy import upward is still a cycle waiting to happen).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {"memwatch_overlay": "memwatch_overlay", "overlay": "memwatch_overlay.overlay",
           "connectors": "memwatch_overlay.connectors", "rules": "memwatch_overlay.rules"}

# Rank of each part of the package: a module may import parts of the same or a lower rank.
LAYERS = [
    ("memwatch_overlay.core", 0),
    ("memwatch_overlay.rules", 1),
    ("memwatch_overlay.connectors", 2),
    ("memwatch_overlay.overlay.store", 2),
    ("memwatch_overlay.overlay.engine", 3),
    ("memwatch_overlay.overlay.detect", 3),
    ("memwatch_overlay.overlay.daemon", 4),
    ("memwatch_overlay.overlay.writeback", 4),
    ("memwatch_overlay.overlay.output", 4),
    ("memwatch_overlay.overlay.cli", 5),
    ("memwatch_overlay.overlay.api", 5),
    ("memwatch_overlay.overlay.mcp_server", 5),
    ("memwatch_overlay.integrations", 5),
    ("memwatch_overlay.overlay", 6),        # the package's own __init__ (docstring only)
    ("memwatch_overlay", 6),                # the root: lazy re-exports of the API
]


def rank(module: str) -> tuple[str, int]:
    for prefix, r in LAYERS:                 # longest prefixes are listed before their parents
        if module == prefix or module.startswith(prefix + "."):
            return prefix, r
    raise AssertionError(f"{module} is in no layer: add it to LAYERS")


def modules():
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = [p for p in path.relative_to(ROOT / folder).with_suffix("").parts if p != "__init__"]
            yield ".".join([package, *parts]), path


def imported(module: str, path: Path):
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("memwatch_overlay"):
                    yield a.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: None if is_package else -1]
                base = base[: len(base) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if name.startswith("memwatch_overlay"):
                for a in node.names:       # `from pkg import submodule` imports the submodule
                    sub = f"{name}.{a.name}"
                    yield (sub if any(m == sub for m, _ in ALL) else name), node.lineno


ALL = list(modules())


def test_every_module_is_in_a_layer():
    for module, _ in ALL:
        rank(module)


@pytest.mark.parametrize("module,path", ALL, ids=[m for m, _ in ALL])
def test_no_upward_import(module, path):
    mine, my_rank = rank(module)
    for target, line in imported(module, path):
        theirs, their_rank = rank(target)
        assert their_rank <= my_rank, (
            f"{path.relative_to(ROOT)}:{line}: {module} ({mine}, layer {my_rank}) imports "
            f"{target} ({theirs}, layer {their_rank}): an upward import")


def test_core_imports_nothing_of_ours_but_core():
    for module, path in ALL:
        if module.startswith("memwatch_overlay.core"):
            for target, line in imported(module, path):
                assert target.startswith("memwatch_overlay.core"), f"{path}:{line}: core imports {target}"


def test_relative_imports_are_not_used():
    """Absolute imports only: a module's imports say which layer they reach into."""
    for module, path in ALL:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                assert not node.level, f"{path.relative_to(ROOT)}:{node.lineno}: relative import"
