"""Every module's doctest examples run, found through the import name.

`pytest --doctest-modules overlay/` cannot import overlay/ by its path (pyproject.toml maps
the repository's folders onto `memwatch_overlay.*`), so this walks the installed package:
each subpackage is imported by name and its modules' docstrings are run with doctest.
"""
from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

ROOTS = ("memwatch_overlay", "memwatch_overlay.overlay", "memwatch_overlay.connectors", "memwatch_overlay.rules")


def module_names() -> list[str]:
    names: set[str] = set()
    for root in ROOTS:
        package = importlib.import_module(root)
        names.add(root)
        for info in pkgutil.walk_packages(package.__path__, prefix=root + "."):
            if root == "memwatch_overlay" and info.name.split(".")[1] in ("overlay", "connectors", "rules"):
                continue       # mapped folders: walked from their own root
            names.add(info.name)
    return sorted(names)


def runs_examples(name: str) -> bool:
    """Whether `name` has doctest examples that are not all marked +SKIP."""
    return any(not ex.options.get(doctest.SKIP)
               for test in doctest.DocTestFinder().find(importlib.import_module(name)) for ex in test.examples)


MODULES = module_names()
WITH_EXAMPLES = [m for m in MODULES if runs_examples(m)]


def test_the_walk_finds_every_folder():
    """The walk reaches the mapped folders, not only memwatch_overlay/ itself."""
    for expected in ("memwatch_overlay.core.vocab", "memwatch_overlay.overlay.store.database",
                     "memwatch_overlay.overlay.cli.errors", "memwatch_overlay.connectors.sqlite",
                     "memwatch_overlay.rules.config"):
        assert expected in MODULES
    assert len(WITH_EXAMPLES) >= 8, WITH_EXAMPLES


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_doctest_examples_pass(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted > 0
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} doctest examples failed (see output)"
