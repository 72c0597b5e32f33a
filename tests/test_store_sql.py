"""SQL on the overlay lives only in overlay/store/ (DESIGN.md, "Layout").

Read with `ast`, every module of the application outside the store package must not
- touch an overlay connection (an attribute named `conn`: `store.conn`, `self.conn`);
- hold a string that reads or writes an overlay table (`FROM facts`, `UPDATE sources` ...;
  the table names come from the migrations themselves);
- import a SQL fragment from the store (a module-level string such as a WHERE clause).
connectors/ is outside this rule: its SQL runs on the watched stores, never on the overlay.
"""
from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from memwatch_overlay.overlay.store.migrations import MIGRATIONS

ROOT = Path(__file__).resolve().parent.parent
STORE = ROOT / "overlay" / "store"
CHECKED = [p for folder in ("overlay", "memwatch_overlay") for p in sorted((ROOT / folder).rglob("*.py"))
           if STORE not in p.parents]

OVERLAY_TABLES = sorted({name for sql in MIGRATIONS.values()
                         for name in re.findall(r"CREATE TABLE (?:IF NOT EXISTS )?(\w+)", sql)}
                        | {"memwatch_meta"})
_TABLE = "|".join(OVERLAY_TABLES)
# SQL keywords in capitals, as the project writes them (prose such as "read from sources" is not SQL)
OVERLAY_SQL = re.compile(rf"\b(?:FROM|JOIN|INTO|UPDATE|TABLE)\s+(?:{_TABLE})\b")

SQL_WORDS = re.compile(r"\b(?:SELECT|FROM|WHERE|AND|OR|IN|IS|NOT|UPDATE|INSERT|DELETE|JOIN|CASE)\b|\?")


def _strings(tree: ast.AST):
    """Every string constant, f-string parts joined (a table name may sit in either)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            yield node.lineno, "".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str)
                                       else "{}" for v in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


def _docstring_nodes(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
                out.add(id(node.body[0].value))
    return out


def test_the_table_list_is_read_from_the_migrations():
    assert {"facts", "sources", "contradictions", "runs", "actions", "fact_vectors"} <= set(OVERLAY_TABLES)


@pytest.mark.parametrize("path", CHECKED, ids=[str(p.relative_to(ROOT)) for p in CHECKED])
def test_no_overlay_connection_outside_the_store(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "conn":
            pytest.fail(f"{path.relative_to(ROOT)}:{node.lineno}: `.conn` outside overlay/store/ "
                        "(ask the store for what you need: add a method to a repository there)")


@pytest.mark.parametrize("path", CHECKED, ids=[str(p.relative_to(ROOT)) for p in CHECKED])
def test_no_overlay_sql_outside_the_store(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = _docstring_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in docstrings:
            continue
        if isinstance(node, (ast.Constant, ast.JoinedStr)):
            for lineno, text in _strings(node):
                m = OVERLAY_SQL.search(text)
                assert m is None, f"{path.relative_to(ROOT)}:{lineno}: overlay SQL outside overlay/store/: {m[0]!r}"
            if isinstance(node, ast.JoinedStr):
                docstrings.update(id(v) for v in node.values)   # parts were checked joined


@pytest.mark.parametrize("path", CHECKED, ids=[str(p.relative_to(ROOT)) for p in CHECKED])
def test_no_sql_fragment_imported_from_the_store(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("memwatch_overlay.overlay.store"):
            module = importlib.import_module(node.module)
            for alias in node.names:
                value = getattr(module, alias.name, None)
                assert not (isinstance(value, str) and SQL_WORDS.search(value)), (
                    f"{path.relative_to(ROOT)}:{node.lineno}: imports the SQL text {alias.name} from the store")


def test_the_checks_catch_what_they_look_for():
    """The three rules fire on a module that breaks them (so a passing run means something)."""
    bad = ast.parse("from memwatch_overlay.overlay.store.facts import LIVE\n"
                    "def f(store, ids):\n"
                    "    return store.conn.execute(f\"SELECT id FROM facts WHERE {LIVE} AND id IN ({ids})\")\n")
    assert any(isinstance(n, ast.Attribute) and n.attr == "conn" for n in ast.walk(bad))
    assert any(OVERLAY_SQL.search(text) for _, text in _strings(bad))
    assert SQL_WORDS.search(importlib.import_module("memwatch_overlay.overlay.store.facts").LIVE)
    assert not SQL_WORDS.search("applied")                  # a vocabulary word is not a fragment
    assert not OVERLAY_SQL.search("facts read from sources, into facts")   # prose is not SQL
