"""Overlay migrations are numbered files that cannot collide: one module per version."""
from __future__ import annotations

import re
import sqlite3
import sys
from pathlib import Path

import pytest

from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.overlay.store.migrations import (
    MIGRATIONS,
    MIGRATIONS_BY_VERSION,
    SCHEMA_VERSION,
    load_migrations,
)

FOLDER = Path(__file__).resolve().parent.parent / "overlay" / "store" / "migrations"


def test_versions_are_contiguous_unique_and_named_by_their_file():
    files = sorted(p.stem for p in FOLDER.glob("v*.py"))
    numbers = [int(re.match(r"v(\d+)_", f)[1]) for f in files]
    assert len(numbers) == len(set(numbers)), f"two migration files share a number: {files}"
    assert sorted(numbers) == list(range(1, len(numbers) + 1)) == list(MIGRATIONS_BY_VERSION)
    assert SCHEMA_VERSION == len(files)
    for version, m in MIGRATIONS_BY_VERSION.items():
        assert m.name.startswith(f"v{version:02d}_") and m.sql.strip() and MIGRATIONS[version] == m.sql


def _package(tmp_path, name: str, modules: dict[str, str]):
    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for mod, sql in modules.items():
        (pkg / f"{mod}.py").write_text(f"SQL = {sql!r}\n")
    sys.path.insert(0, str(tmp_path))
    return [str(pkg)], name


def test_two_migrations_with_one_number_are_refused(tmp_path):
    path, name = _package(tmp_path, "mig_dup", {"v01_a": "CREATE TABLE a (x)", "v01_b": "CREATE TABLE b (x)"})
    try:
        with pytest.raises(ImportError, match="two overlay migrations for v1"):
            load_migrations(path, name)
    finally:
        sys.path.remove(str(tmp_path))


def test_a_gap_is_refused(tmp_path):
    path, name = _package(tmp_path, "mig_gap", {"v01_a": "CREATE TABLE a (x)", "v03_c": "CREATE TABLE c (x)"})
    try:
        with pytest.raises(ImportError, match="without gaps"):
            load_migrations(path, name)
    finally:
        sys.path.remove(str(tmp_path))


def test_each_version_applies_on_top_of_the_previous(tmp_path):
    """Stopping after any version and opening the file with the store finishes the job."""
    for stop in range(1, SCHEMA_VERSION + 1):
        path = tmp_path / f"v{stop}.db"
        conn = sqlite3.connect(path)
        for v in range(1, stop + 1):
            conn.executescript(MIGRATIONS[v])
        conn.execute(f"PRAGMA user_version = {stop}")
        conn.commit()
        conn.close()
        with OverlayStore(path) as store:
            assert store.schema_version() == SCHEMA_VERSION
            assert store.integrity() == "ok"
