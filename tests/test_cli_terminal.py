"""Output that fits terminals, pipes and CI: colour on a real terminal (pty) unless NO_COLOR,
a closed pipe never reads as the gate's exit 1, "no gate configured" without thresholds."""
from __future__ import annotations

import json
import os
import pty
import re
import select
import shutil
import subprocess
import time
from xml.etree import ElementTree as ET

import pytest

from conftest import AGENT_STORES
from storegen import EXE, run

AS_OF = "2026-11-29T15:57:40Z"
ANSI = "\x1b["


def big_table(path, n=5000):
    import sqlite3
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, user_id TEXT, content TEXT, created_at TEXT)")
        conn.executemany("INSERT INTO notes VALUES (?, ?, ?, ?)",
                         [(i, f"u{i % 50}", f"note {i} about the weather", "2026-01-01T00:00:00Z")
                          for i in range(n)])
    return path


@pytest.fixture
def store(tmp_path):
    shutil.copy(AGENT_STORES / "langgraph" / "langgraph_store.sqlite", tmp_path / "lg.sqlite")
    return tmp_path / "lg.sqlite"


def run_in_pty(args, cwd, env=None, columns=80, timeout=60):
    """The console script on a real terminal (a pty as stdin/stdout/stderr); (exit code, what it drew)."""
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "TERM")}
    base.update({"TERM": "xterm-256color", "COLUMNS": str(columns), "LINES": "50", **(env or {})})
    pid, fd = pty.fork()
    if pid == 0:                                   # the child: exec on the pty
        os.chdir(cwd)
        os.execve(EXE, [EXE, *map(str, args)], base)
    chunks, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:                        # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), b"".join(chunks).decode("utf-8", "replace")


def test_colour_on_a_terminal_and_none_with_no_color(store, tmp_path):
    args = ["audit", store, "--as-of", AS_OF, "--overlay", tmp_path / "o.db"]
    code, out = run_in_pty(args, tmp_path)
    assert code == 0 and ANSI in out and "fresh" in out
    code, out = run_in_pty(args, tmp_path, env={"NO_COLOR": "1"})
    assert code == 0 and "fresh" in out
    assert ANSI + "3" not in out and ANSI + "1;3" not in out     # no foreground colour codes
    # report and stats follow it too
    code, out = run_in_pty(["report", "--overlay", tmp_path / "o.db", "--as-of", AS_OF], tmp_path,
                           env={"NO_COLOR": "1"})
    assert code == 0 and "fresh" in out and ANSI + "3" not in out


@pytest.mark.parametrize("fmt", ["json", "ndjson", "csv"])
def test_a_closed_pipe_exits_141_never_the_gates_1(tmp_path, fmt):
    # a report far bigger than the pipe's buffer, so memwatch is still writing when `head`
    # has gone, and a gate that fails: the exit code must still not be 1
    store = big_table(tmp_path / "big.db", 4000)
    shell = (f"'{EXE}' audit '{store}' --as-of {AS_OF} --overlay '{tmp_path / 'o.db'}' --format {fmt} "
             "--max-stale 0 | head -c 1 >/dev/null; echo \"${PIPESTATUS[0]}\"")
    proc = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          env={**os.environ, "COLUMNS": "80"})
    assert proc.stdout.strip() == "141", proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr


def test_without_thresholds_there_is_no_gate_to_pass(store, tmp_path):
    proc = run("audit", store, "--as-of", AS_OF, "--overlay", tmp_path / "o.db", "--format", "json", cwd=tmp_path)
    data = json.loads(proc.stdout)
    assert proc.returncode == 0 and data["passed"] is True and data["gate"] == "none"
    table = run("report", "--overlay", tmp_path / "o.db", "--as-of", AS_OF, cwd=tmp_path)
    assert "no gate configured" in table.stdout and "gate passed" not in table.stdout
    md = run("report", "--overlay", tmp_path / "o.db", "--as-of", AS_OF, "--format", "markdown", cwd=tmp_path)
    assert md.stdout.startswith("## memwatch-overlay audit: no gate configured")
    gated = run("report", "--overlay", tmp_path / "o.db", "--as-of", AS_OF, "--format", "json",
                "--max-stale-ratio", "0.9", cwd=tmp_path)
    assert json.loads(gated.stdout)["gate"] == "passed"
    failed = run("report", "--overlay", tmp_path / "o.db", "--as-of", AS_OF, "--format", "json",
                 "--max-stale", "0", cwd=tmp_path)
    assert failed.returncode == 1 and json.loads(failed.stdout)["gate"] == "failed"


def test_junit_failures_are_the_gates_unless_asked_per_fact(store, tmp_path):
    args = ["audit", store, "--as-of", AS_OF, "--overlay", tmp_path / "o.db", "--format", "junit"]
    passing = run(*args, cwd=tmp_path)
    assert passing.returncode == 0
    assert ET.fromstring(passing.stdout).get("failures") == "0"        # exit 0, nothing red
    failing = run(*args, "--max-stale", "0", cwd=tmp_path)
    root = ET.fromstring(failing.stdout)
    assert failing.returncode == 1 and root.get("failures") == "1"
    per_fact = run(*args, "--junit-failures", "facts", cwd=tmp_path)
    assert per_fact.returncode == 0 and int(ET.fromstring(per_fact.stdout).get("failures")) > 1


def test_progress_shows_total_percentage_and_phases_on_a_terminal_only(tmp_path):
    db = big_table(tmp_path / "big.db")
    args = ["audit", db, "--overlay", tmp_path / "o.db", "--as-of", AS_OF, "--format", "json",
            "--output", tmp_path / "r.json"]
    code, drawn = run_in_pty(args, tmp_path, env={"MEMWATCH_PROGRESS_DELAY": "0"}, columns=120)
    assert code == 0, drawn
    assert "of 5,000 records" in drawn and "%)" in drawn            # SQLite count(*) as the total
    assert "scoring and detecting contradictions" in drawn and "writing report" in drawn
    # the walk of the blocks counts the facts it has done, and its last count is always drawn
    assert re.search(r"detecting contradictions \(\S+: 5,000 of 5,000 facts, 100%\)", drawn), drawn
    # not a terminal (a CI log): nothing but the note on stderr
    proc = run(*args, cwd=tmp_path, MEMWATCH_PROGRESS_DELAY="0")
    assert proc.returncode == 0 and "records" not in proc.stderr and "\x1b" not in proc.stderr


def test_the_size_estimate_of_sqlite_and_json_lines(tmp_path):
    from memwatch_overlay.connectors.estimate import estimate
    from memwatch_overlay.rules.config import SourceConfig
    db = big_table(tmp_path / "big.db", 1234)
    est = estimate(SourceConfig(name="b", connector="sqlite", path=str(db), table="notes"))
    assert est.records == 1234 and est.exact
    lines = tmp_path / "m.jsonl"
    lines.write_text("".join(json.dumps({"id": i, "text": "x" * (i % 40)}) + "\n" for i in range(20000)))
    est = estimate(SourceConfig(name="j", connector="json", path=str(lines)))
    assert not est.exact and abs(est.records - 20000) < 2000 and est.size_bytes == lines.stat().st_size
