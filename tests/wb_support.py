"""Helpers shared by the write-back tests (stores, configs, whole-row snapshots, the CLI)."""
from __future__ import annotations

import hashlib
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LANGGRAPH_FIXTURE = HERE / "fixtures" / "agent-stores" / "langgraph" / "langgraph_store.sqlite"
LANGGRAPH_REFERENCE = "2026-11-29T15:57:40"
CLI = Path(sys.executable).with_name("memwatch-overlay")

OLD = "2001-01-01 00:00:00"        # far past: expired at any as_of below
AS_OF = "2026-11-29T12:00:00"


def copy_langgraph(tmp_path: Path) -> Path:
    dest = tmp_path / "langgraph_store.sqlite"
    shutil.copyfile(LANGGRAPH_FIXTURE, dest)
    return dest


def snapshot(path: Path, table: str = "store", rowid: bool = False) -> dict:
    """Every row, every column as (typeof, value), keyed by the primary key (or rowid)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        qt = '"' + table.replace('"', '""') + '"'
        info = conn.execute("SELECT name, pk FROM pragma_table_info(?)", (table,)).fetchall()
        cols = [c for c, _ in info]
        pk = [c for c, n in sorted((r for r in info if r[1]), key=lambda r: r[1])]
        parts = ["rowid" if rowid else "NULL"]
        for c in cols:
            q = '"' + c.replace('"', '""') + '"'
            parts += [f"typeof({q})", q]
        out = {}
        for row in conn.execute(f"SELECT {', '.join(parts)} FROM {qt}"):
            values = {c: (row[1 + 2 * i], row[2 + 2 * i]) for i, c in enumerate(cols)}
            key = (row[0],) if rowid else tuple(values[c][1] for c in pk)
            out[key] = values
        return out
    finally:
        conn.close()


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_config(tmp_path: Path, text: str, name: str = "memwatch.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def run_cli(*args, cwd: Path, check: bool = False) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(CLI), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


def make_typed_store(path: Path, rows: int = 6) -> None:
    """A home-made store whose rows mix every SQLite storage class, for exact-restore tests.

    Rows with odd ids are old (expired at AS_OF), even ids are fresh.
    """
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE facts (
            id INTEGER PRIMARY KEY,
            fact TEXT NOT NULL,
            created_at TEXT,
            expires_at TEXT,
            score REAL,
            hits INTEGER,
            raw BLOB,
            anything,
            note TEXT,
            flag INTEGER
        );
    """)
    anything = [42, "forty-two", 4.25, b"\x00\xff\xfe", None, 10**15]
    for i in range(1, rows + 1):
        conn.execute(
            "INSERT INTO facts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (i, f"fact number {i}", OLD if i % 2 else "2026-11-28 10:00:00",
             None if i % 3 else "2030-01-01T00:00:00Z", i / 3, i * 7, bytes([i, 0, 255, 128]),
             anything[(i - 1) % len(anything)], None if i % 2 else f"note {i}", i % 2))
    conn.commit()
    conn.close()


TYPED_SOURCE = """
[[sources]]
name = "bot"
connector = "sqlite"
path = "facts.db"
table = "facts"
id = "id"
text = "fact"
created_at = "created_at"
expires_at = "expires_at"
"""
