"""The daemon as users run it: the `memwatch-overlay` console script in its own process.

- kill -9 at random moments while a bot process writes, then a restart: every source row
  ends in the overlay exactly once with its last text, deletions are marked, and the bot
  never got `database is locked`;
- SIGTERM: clean exit 0 after the transaction in progress, with a final log line;
  SIGINT exits 130; a second signal during a long sync exits at once and the overlay
  holds all of that sync or none of it;
- sources that disappear, stay locked or are corrupt are reported and retried with
  backoff while another source keeps syncing, and recover when they come back.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

T0 = "2026-01-01 00:00:00"


def console_script() -> str:
    here = Path(sys.executable).parent / "memwatch-overlay"
    found = str(here) if here.exists() else shutil.which("memwatch-overlay")
    assert found, "the memwatch-overlay console script is not installed (pip install -e .)"
    return found


WRITER = r'''
import random, sqlite3, sys, time, datetime as dt
path, n_rows, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(seed)
conn = sqlite3.connect(path, timeout=2.0, isolation_level=None)   # the bot's busy timeout: 2 s
locked = 0
def now():
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")
def tx(fn):
    global locked
    while True:
        try:
            conn.execute("BEGIN IMMEDIATE")
            fn()
            conn.execute("COMMIT")
            return
        except sqlite3.OperationalError as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if "locked" in str(exc) or "busy" in str(exc):
                locked += 1
                print("LOCKED", exc, file=sys.stderr, flush=True)
                time.sleep(0.01)
                continue
            raise
written = 0
while written < n_rows:
    k = rnd.randint(1, 8)
    def work():
        global written
        for _ in range(k):
            if written >= n_rows:
                return
            written += 1
            t = now()
            conn.execute("INSERT INTO facts (fact, created_at, updated_at) VALUES (?, ?, ?)",
                         (f"fact {written} v1", t, t))
        top = conn.execute("SELECT max(id) FROM facts").fetchone()[0]
        for _ in range(rnd.randint(0, 3)):
            i = rnd.randint(1, top)
            conn.execute("UPDATE facts SET fact = fact || '+', updated_at = ? WHERE id = ?", (now(), i))
        if rnd.random() < 0.05:
            conn.execute("DELETE FROM facts WHERE id = ?", (rnd.randint(1, top),))
    tx(work)
    time.sleep(rnd.uniform(0, 0.004))
print("DONE", written, locked, flush=True)
sys.exit(3 if locked else 0)
'''


def make_store(path: Path, n: int = 0, wal: bool = True) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    if wal:
        conn.execute("PRAGMA journal_mode = WAL")
    else:
        conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("CREATE TABLE facts (id INTEGER PRIMARY KEY, fact TEXT, created_at TEXT, updated_at TEXT)")
    if n:
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO facts (fact, created_at, updated_at) VALUES (?, ?, ?)",
                         ((f"fact {i}", T0, T0) for i in range(1, n + 1)))
        conn.execute("COMMIT")
    conn.close()


def write_config(folder: Path, names: dict[str, str], **daemon) -> Path:
    settings = {"debounce_seconds": 0.05, "max_delay_seconds": 0.3, "deletion_scan_seconds": 1,
                "rescore_seconds": 5, "heartbeat_seconds": 0.5, "backoff_initial_seconds": 0.2,
                "backoff_max_seconds": 1, "busy_timeout_seconds": 0.2, "update_scan_seconds": 0.5, **daemon}
    lines = ["[daemon]"] + [f"{k} = {json.dumps(v)}" for k, v in settings.items()]
    for name, file in names.items():
        lines += ["", "[[sources]]", f'name = "{name}"', 'connector = "sqlite"', f'path = "{file}"',
                  'table = "facts"', 'id = "id"', 'text = "fact"', 'created_at = "created_at"',
                  'updated_at = "updated_at"', "poll_seconds = 0.5"]
    conf = folder / "memwatch.toml"
    conf.write_text("\n".join(lines) + "\n")
    return conf


class DaemonProcess:
    def __init__(self, conf: Path, *args: str, log_format: str = "json"):
        self.log_path = conf.parent / f"daemon-{time.monotonic_ns()}.log"
        self.log_file = open(self.log_path, "w")
        self.proc = subprocess.Popen([console_script(), "daemon", "--config", str(conf), "--log-format", log_format,
                                      *args], stdout=subprocess.DEVNULL, stderr=self.log_file, cwd=conf.parent)

    def lines(self) -> list[str]:
        return [ln for ln in self.log_path.read_text().splitlines() if ln.strip()]

    def events(self) -> list[dict]:
        return [json.loads(ln) for ln in self.lines()]

    def wait_log(self, predicate, limit: float = 30.0) -> bool:
        return wait_for(lambda: any(predicate(e) for e in self.events()), limit)

    def signal(self, sig) -> None:
        self.proc.send_signal(sig)

    def wait(self, limit: float = 60.0) -> int:
        try:
            return self.proc.wait(limit)
        finally:
            self.log_file.close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.log_file.close()


def wait_for(predicate, limit: float = 30.0) -> bool:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        try:
            if predicate():
                return True
        except sqlite3.OperationalError:
            pass     # the overlay is being created
        time.sleep(0.05)
    return False


def overlay_rows(folder: Path, source: str = "bot") -> list[tuple]:
    path = folder / ".memwatch" / "overlay.db"
    if not path.exists():
        return []
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT f.pk, f.text, f.status FROM facts f JOIN sources s ON s.id = f.source_id "
                            "WHERE s.name = ?", (source,)).fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()


def source_rows(db: Path) -> dict[str, str]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {str(i): text for i, text in conn.execute("SELECT id, fact FROM facts")}
    finally:
        conn.close()


def caught_up(folder: Path, db: Path) -> bool:
    live = {json.loads(pk)["id"]: text for pk, text, status in overlay_rows(folder) if status == "active"}
    return live == source_rows(db)


def status_json(conf: Path) -> dict:
    out = subprocess.run([console_script(), "status", "--config", str(conf), "--format", "json"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_kill_9_at_random_moments_loses_nothing_and_duplicates_nothing(tmp_path):
    db = tmp_path / "bot.db"
    make_store(db)
    conf = write_config(tmp_path, {"bot": "bot.db"})
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(db), "12000", "11"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rnd = random.Random(5)
    kills = 0
    daemon = DaemonProcess(conf)
    try:
        while writer.poll() is None and kills < 6:
            time.sleep(rnd.uniform(0.3, 1.2))
            daemon.proc.kill()             # SIGKILL: no handler, no cleanup, maybe mid-transaction
            daemon.proc.wait(10)
            daemon.log_file.close()
            kills += 1
            daemon = DaemonProcess(conf)
        out, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, f"the bot saw 'database is locked' beyond its busy timeout:\n{err}"
        assert "LOCKED" not in err
        assert kills >= 2, "the writer finished before the daemon could be killed twice"
        assert wait_for(lambda: caught_up(tmp_path, db), 60), "the restarted daemon did not catch up"
        daemon.signal(signal.SIGTERM)
        assert daemon.wait() == 0
    finally:
        daemon.kill()
        if writer.poll() is None:
            writer.kill()
    truth = source_rows(db)
    rows = overlay_rows(tmp_path)
    pks = [json.loads(pk)["id"] for pk, _, _ in rows]
    assert len(pks) == len(set(pks)), "a fact was duplicated"
    live = {json.loads(pk)["id"]: text for pk, text, status in rows if status == "active"}
    assert live == truth, "a fact was lost, or its last update was"
    deleted = {json.loads(pk)["id"] for pk, _, status in rows if status == "deleted"}
    assert deleted == set(pks) - set(truth), "rows deleted in the source are marked deleted, not erased"
    conn = sqlite3.connect(tmp_path / ".memwatch" / "overlay.db")
    cursor = json.loads(conn.execute("SELECT cursor_json FROM sources WHERE name = 'bot'").fetchone()[0])
    conn.close()
    assert cursor["rowid"] == max(int(k) for k in pks)


def test_sigterm_stops_cleanly_with_a_final_log_line(tmp_path):
    make_store(tmp_path / "bot.db", 200)
    conf = write_config(tmp_path, {"bot": "bot.db"})
    daemon = DaemonProcess(conf, log_format="text")
    try:
        assert wait_for(lambda: len(overlay_rows(tmp_path)) == 200)
        daemon.signal(signal.SIGTERM)
        assert daemon.wait() == 0
    finally:
        daemon.kill()
    lines = daemon.lines()
    assert "daemon stopped (SIGTERM)" in lines[-1]
    assert all(not ln.startswith("{") and "Traceback" not in ln for ln in lines)
    assert status_json(conf)["daemon"]["running"] is False


def test_sigint_exits_130_and_json_logs_are_one_object_per_line(tmp_path):
    make_store(tmp_path / "bot.db", 50)
    conf = write_config(tmp_path, {"bot": "bot.db"})
    daemon = DaemonProcess(conf, log_format="json")
    try:
        assert daemon.wait_log(lambda e: e.get("event") == "full")
        daemon.signal(signal.SIGINT)
        assert daemon.wait() == 130
    finally:
        daemon.kill()
    events = daemon.events()
    assert events[0]["event"] == "start" and events[-1]["event"] == "stop" and events[-1]["reason"] == "SIGINT"
    full = next(e for e in events if e.get("event") == "full")
    assert full["source"] == "bot" and full["rows_read"] == 50 and {"ts", "level", "msg"} <= set(full)


def test_second_signal_exits_at_once_and_the_sync_is_all_or_nothing(tmp_path):
    n = 150_000
    make_store(tmp_path / "bot.db", n)
    conf = write_config(tmp_path, {"bot": "bot.db"})
    daemon = DaemonProcess(conf)
    try:
        assert daemon.wait_log(lambda e: e.get("event") == "start")
        time.sleep(0.3)                      # inside the first full sync
        daemon.signal(signal.SIGINT)
        time.sleep(0.05)
        daemon.signal(signal.SIGINT)
        assert daemon.wait(30) == 130
    finally:
        daemon.kill()
    assert len(overlay_rows(tmp_path)) in (0, n), "a half-written sync survived"
    again = subprocess.run([console_script(), "daemon", "--config", str(conf), "--once"],
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert len(overlay_rows(tmp_path)) == n


LOCKER = r'''
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
conn.execute("INSERT INTO facts (fact, created_at, updated_at) VALUES ('written under the lock', '2026-01-02', '2026-01-02')")
print("locked", flush=True)
sys.stdin.readline()           # hold the lock until the test says so
conn.execute("COMMIT")
'''


def test_gone_locked_and_corrupt_sources_back_off_while_another_keeps_syncing(tmp_path):
    make_store(tmp_path / "good.db", 5)
    make_store(tmp_path / "locked.db", 5, wal=False)      # rollback journal: EXCLUSIVE blocks readers
    make_store(tmp_path / "gone.db", 5)
    (tmp_path / "corrupt.db").write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 40)
    conf = write_config(tmp_path, {"good": "good.db", "locked": "locked.db", "gone": "gone.db",
                                   "corrupt": "corrupt.db"}, error_log_seconds=0)
    locker = subprocess.Popen([sys.executable, "-c", LOCKER, str(tmp_path / "locked.db")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert locker.stdout.readline().strip() == "locked"
    daemon = DaemonProcess(conf)
    try:
        assert wait_for(lambda: len(overlay_rows(tmp_path, "gone")) == 5)
        os.unlink(tmp_path / "gone.db")
        for i in range(3):                                  # the good source keeps syncing meanwhile
            with sqlite3.connect(tmp_path / "good.db") as w:
                w.execute("INSERT INTO facts (fact, created_at, updated_at) VALUES (?, ?, ?)", (f"new {i}", T0, T0))
            assert wait_for(lambda: len(overlay_rows(tmp_path, "good")) == 6 + i)
        assert daemon.wait_log(lambda e: e.get("source") == "gone" and e.get("event") == "error"
                               and "no such file" in e["error"])
        assert daemon.wait_log(lambda e: e.get("source") == "locked" and e.get("event") == "error"
                               and e["attempt"] >= 5)
        errors = [e for e in daemon.events() if e.get("event") == "error" and e["source"] == "locked"]
        assert "locked" in errors[0]["error"]
        delays = [e["retry_seconds"] for e in errors]
        assert delays[:3] == [0.2, 0.4, 0.8] and max(delays) == 1.0, "capped exponential backoff"
        corrupt = [e for e in daemon.events() if e.get("event") == "error" and e["source"] == "corrupt"]
        assert corrupt and "corrupt.db" in corrupt[0]["error"]

        locker.stdin.write("\n")
        locker.stdin.flush()
        assert locker.wait(10) == 0
        make_store(tmp_path / "gone.db", 2)
        assert daemon.wait_log(lambda e: e.get("event") == "recovered" and e["source"] == "locked")
        assert daemon.wait_log(lambda e: e.get("event") == "recovered" and e["source"] == "gone")
        assert wait_for(lambda: len(overlay_rows(tmp_path, "locked")) == 6)
        assert wait_for(lambda: sorted(s for _, _, s in overlay_rows(tmp_path, "gone")) == ["active"] * 2 + ["deleted"] * 3)

        status = {s["name"]: s for s in status_json(conf)["sources"]}
        assert status["good"]["rows_seen"] == 8 and status["good"]["errors"] == 0
        assert status["corrupt"]["errors"] >= 2 and status["corrupt"]["consecutive_errors"] >= 2
        assert "corrupt.db" in status["corrupt"]["last_error"]
        assert status["locked"]["errors"] >= 3 and status["locked"]["consecutive_errors"] == 0
        daemon.signal(signal.SIGTERM)
        assert daemon.wait() == 0
    finally:
        daemon.kill()
        if locker.poll() is None:
            locker.kill()
