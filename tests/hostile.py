"""Hostile inputs for the hardening tests (issue 16), shared so each attack is written once.

Every helper makes a real file (or process) the installed console script is then run
against; `assert_clean_error` is the contract for bad input: one `Error:` line, exit 2,
no traceback.
"""
from __future__ import annotations

import os
import sqlite3
import subprocess
import textwrap
from pathlib import Path

from storegen import AS_OF, EXE, make_store  # noqa: F401 (re-exported for the tests)


def run(*args, cwd, timeout: float = 120, env: dict | None = None, input: str | None = None):
    """The console script in `cwd`; a hang fails the test through `timeout`."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    return subprocess.run([EXE, *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env={**base, "COLUMNS": "160", **(env or {})}, timeout=timeout, input=input)


def assert_clean_error(proc, *needles: str, code: int = 2) -> str:
    """Exit `code`, no traceback, the message on one `Error:` line containing each needle."""
    err = proc.stderr
    assert proc.returncode == code, (proc.returncode, proc.stdout[-2000:], err[-2000:])
    assert "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.startswith("Error:")]
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], (needle, err)
    return lines[0]


def assert_no_traceback(proc) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1), (proc.returncode, proc.stderr[-2000:])


def config(folder: Path, body: str, name: str = "memwatch.toml") -> Path:
    """memwatch.toml with `[overlay] path = "overlay.db"` and `body` appended (dedented)."""
    path = folder / name
    path.write_text('[overlay]\npath = "overlay.db"\n\n' + textwrap.dedent(body))
    return path


def jsonl_source(name: str = "notes", path: str = "notes.jsonl", extra: str = "") -> str:
    """A [[sources]] entry for a JSON Lines file with id/text/created_at fields."""
    return textwrap.dedent(f'''
        [[sources]]
        name = "{name}"
        connector = "json"
        path = "{path}"
        id = "id"
        text = "text"
        created_at = "created_at"
        updated_at = "updated_at"
        {extra}
        ''')


def sqlite_source(name: str = "bot", path: str = "bot.db", extra: str = "") -> str:
    """A [[sources]] entry for the storegen `memories` table."""
    return textwrap.dedent(f'''
        [[sources]]
        name = "{name}"
        connector = "sqlite"
        path = "{path}"
        table = "memories"
        id = "id"
        text = "content"
        key = "fact_key"
        subject = "user_id"
        created_at = "created_at"
        category = "kind"
        {extra}
        ''')


def deep_json(levels: int = 100_000) -> str:
    """A JSON value nested `levels` deep (RecursionError in the json module)."""
    return '{"id": 1, "text": ' + "[" * levels + "]" * levels + "}"


def huge_int_json(digits: int = 5000) -> str:
    """A record whose id is a `digits`-digit integer (ValueError past Python's int limit)."""
    return '{"id": ' + "9" * digits + ', "text": "works at Google"}'


def make_fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def table_names(db: Path) -> set[str]:
    conn = sqlite3.connect(db)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        conn.close()


def file_state(path: Path) -> tuple[bytes, int]:
    """Bytes and mtime of a source file: equal before and after means nothing was written."""
    return path.read_bytes(), path.stat().st_mtime_ns
