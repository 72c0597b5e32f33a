"""A real v7 overlay file, written by the console script (overlay writers as main at 83be77e;
tests/fixtures/overlay-v7/make_overlay_v7.py says how), opened by today's code: what
report, search, export and undo print about it must be what they printed then.

This is the test a schema migration answers to: the file is copied and opened, so a newer
schema migrates it first, and every fact, action and run of the old file must come out
the same (the export's header names the schema version, the one line allowed to differ).
"""
from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURE = Path(__file__).parent / "fixtures" / "overlay-v7"
EXE = Path(sys.executable).with_name("memwatch-overlay")
LATER = "2026-12-20T08:30:00"


def run(folder: Path, *args: str) -> str:
    proc = subprocess.run([str(EXE), *args, "--config", "memwatch.toml"], cwd=folder, capture_output=True,
                          text=True)
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stdout


def expected(name: str) -> str:
    return (FIXTURE / "expected" / name).read_text(encoding="utf-8")


@pytest.fixture
def old_overlay(tmp_path) -> Path:
    folder = tmp_path / "overlay-v7"
    folder.mkdir()
    for name in ("overlay.db", "agent.db", "memwatch.toml"):
        shutil.copy(FIXTURE / name, folder / name)
    assert sqlite3.connect(folder / "overlay.db").execute("PRAGMA user_version").fetchone()[0] == 7
    return folder


def test_the_fixture_holds_every_kind_of_overlay_state():
    conn = sqlite3.connect(f"file:{FIXTURE / 'overlay.db'}?mode=ro", uri=True)
    statuses = dict(conn.execute("SELECT status, count(*) FROM facts GROUP BY status").fetchall())
    assert {"active", "contradicted", "deleted", "forgotten"} <= set(statuses)
    assert conn.execute("SELECT count(*) FROM facts WHERE refreshed_at IS NOT NULL").fetchone()[0] >= 1
    assert conn.execute("SELECT count(*) FROM contradictions").fetchone()[0] > 0
    kinds = dict(conn.execute("SELECT kind, count(*) FROM actions GROUP BY kind").fetchall())
    assert kinds.get("set", 0) > 1 and kinds.get("annotate", 0) > 0
    assert conn.execute("SELECT count(*) FROM actions WHERE undone_at IS NOT NULL").fetchone()[0] >= 1
    assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] >= 2
    conn.close()


def test_report_search_export_and_undo_print_what_they_printed_on_v7(old_overlay):
    # the same commands in the same order as when the outputs were recorded (a report
    # rescores at --as-of; undo writes the source)
    assert run(old_overlay, "report", "--format", "json", "--as-of", LATER) == expected("report.json")
    assert run(old_overlay, "report", "--format", "ndjson", "--as-of", LATER) == expected("report.ndjson")
    assert run(old_overlay, "report", "--format", "csv", "--as-of", LATER) == expected("report.csv")
    assert run(old_overlay, "search", "Works at", "--format", "json", "--limit", "25", "--as-of", LATER) \
        == expected("search.json")
    run(old_overlay, "export", "export.jsonl")
    got = (old_overlay / "export.jsonl").read_text(encoding="utf-8").splitlines()
    want = expected("export.jsonl").splitlines()
    header, want_header = json.loads(got[0]), json.loads(want[0])
    assert {**header, "schema_version": None} == {**want_header, "schema_version": None}
    assert got[1:] == want[1:]
    assert run(old_overlay, "undo", "--since", "2000-01-01", "--format", "json") == expected("undo.json")
    conn = sqlite3.connect(old_overlay / "agent.db")
    rows = {t: [list(r) for r in conn.execute(f"SELECT * FROM {t} ORDER BY rowid")] for t in ("agent_facts", "notes")}
    conn.close()
    assert rows == json.loads(expected("source-after-undo.json"))
    # undo really put rows back: the write-back's expiry is gone from every row it set
    assert all(r[6] is None for r in rows["agent_facts"])
