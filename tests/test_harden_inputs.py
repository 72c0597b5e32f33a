"""Hostile files and paths given to the installed tool (issue 16: points 1, 5-8, 10).

Each case runs the console script in a subprocess against real files: the contract is a
one-line `Error:` and exit 2 (or a warning and the rest read), never a traceback, a hang or
a write into a source.
"""
from __future__ import annotations

import json
import os

import pytest

from hostile import (AS_OF, assert_clean_error, assert_no_traceback, config, deep_json, file_state,
                     huge_int_json, jsonl_source, make_fifo, make_store, run, sqlite_source, table_names)


# -- 1. the overlay is never a source ---------------------------------------------------

def test_overlay_that_is_the_target_is_refused_and_the_store_untouched(tmp_path):
    store = make_store(tmp_path / "bot.db")
    before = file_state(store)
    proc = run("audit", "bot.db", "--overlay", "bot.db", "--as-of", AS_OF, cwd=tmp_path)
    assert_clean_error(proc, "--overlay", "bot.db")
    assert table_names(store) == {"memories"}
    assert file_state(store) == before


def test_overlay_reached_through_a_link_is_refused(tmp_path):
    store = make_store(tmp_path / "bot.db")
    (tmp_path / "sub").mkdir()
    os.symlink(store, tmp_path / "sub" / "overlay.db")
    proc = run("audit", "bot.db", "--overlay", "sub/overlay.db", "--as-of", AS_OF, cwd=tmp_path)
    assert_clean_error(proc, "is the source")
    assert table_names(store) == {"memories"}


@pytest.mark.parametrize("command", [("audit",), ("daemon", "--once"), ("plan",)])
def test_config_overlay_path_equal_to_a_source_is_refused(tmp_path, command):
    store = make_store(tmp_path / "bot.db")
    (tmp_path / "memwatch.toml").write_text('[overlay]\npath = "./bot.db"\n' + sqlite_source())
    proc = run(*command, "--config", "memwatch.toml", cwd=tmp_path, timeout=60)
    assert_clean_error(proc, "is the source")
    assert table_names(store) == {"memories"}


# -- 5. non-regular files ---------------------------------------------------------------

@pytest.mark.parametrize("name", ["pipe.jsonl", "pipe.db", "pipe"])
def test_fifo_target_is_refused_without_blocking(tmp_path, name):
    make_fifo(tmp_path / name)
    proc = run("audit", name, "--overlay", "o.db", cwd=tmp_path, timeout=30)
    assert_clean_error(proc, "FIFO")


def test_fifo_as_a_configured_json_source_is_refused(tmp_path):
    make_fifo(tmp_path / "notes.jsonl")
    config(tmp_path, jsonl_source())
    proc = run("audit", "--config", "memwatch.toml", cwd=tmp_path, timeout=30)
    assert_clean_error(proc, "FIFO")


@pytest.mark.parametrize("sidecar", ["store.db-journal", "store.db-wal", "o.db-journal", "o.db-wal"])
def test_a_fifo_where_sqlite_keeps_a_journal_is_refused_without_blocking(tmp_path, sidecar):
    """SQLite opens a database's -journal on its own (to see whether it is hot): a FIFO there,
    beside the store or the overlay, blocked the audit forever. Refused before SQLite opens
    it, naming the file; nothing written to the store."""
    make_store(tmp_path / "store.db")
    before = file_state(tmp_path / "store.db")
    make_fifo(tmp_path / sidecar)
    proc = run("audit", "store.db", "--overlay", "o.db", cwd=tmp_path, timeout=60)
    assert_clean_error(proc, sidecar, "FIFO")
    assert file_state(tmp_path / "store.db") == before


def test_device_as_target_is_refused(tmp_path):
    proc = run("audit", "/dev/zero", "--overlay", "o.db", cwd=tmp_path, timeout=30)
    assert_clean_error(proc, "device")


# -- 6. JSONL lines are streamed with a maximum length ------------------------------------

def _jsonl(path, *lines: str) -> None:
    path.write_text("".join(line + "\n" for line in lines))


def _report_texts(tmp_path) -> dict:
    proc = run("report", "--config", "memwatch.toml", "--format", "json", "--as-of", AS_OF, cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    return {f["ref"]: f for f in json.loads(proc.stdout)["facts"]}


def test_overlong_jsonl_line_is_skipped_with_a_warning_and_the_rest_read(tmp_path):
    big = json.dumps({"id": 2, "text": "x" * 3_000_000, "created_at": "2026-01-01"})
    _jsonl(tmp_path / "notes.jsonl", '{"id": 1, "text": "works at Google", "created_at": "2026-01-01"}', big,
           '{"id": 3, "text": "lives in Paris", "created_at": "2026-01-02"}')
    config(tmp_path, jsonl_source(extra="max_line_bytes = 4096"))
    proc = run("audit", "--config", "memwatch.toml", "--as-of", AS_OF, cwd=tmp_path)
    assert_no_traceback(proc)
    assert "notes.jsonl:2: line of 3000" in proc.stderr and "max_line_bytes = 4096" in proc.stderr
    refs = _report_texts(tmp_path)
    assert sorted(r.rsplit(":", 1)[1] for r in refs) == ["1", "3"]


# -- 4. regex time and text length ---------------------------------------------------------

def test_catastrophic_rule_regex_is_refused_at_config_load(tmp_path):
    _jsonl(tmp_path / "notes.jsonl", json.dumps({"id": 1, "text": "a" * 40 + "!"}))
    config(tmp_path, jsonl_source() + '\n[[rules]]\ncategory = "general"\ntext = ["(a+)+$"]\n')
    proc = run("audit", "--config", "memwatch.toml", cwd=tmp_path, timeout=60)
    assert_clean_error(proc, "rules[0].text[0]", "exponential")


def test_long_texts_are_categorised_by_their_first_max_text_chars(tmp_path):
    late = "x " * 300 + "she works at Google"
    _jsonl(tmp_path / "notes.jsonl", json.dumps({"id": 1, "text": late, "created_at": "2026-01-01"}),
           json.dumps({"id": 2, "text": "she works at Google", "created_at": "2026-01-01"}))
    config(tmp_path, jsonl_source() + "\n[limits]\nmax_text_chars = 200\n")
    proc = run("audit", "--config", "memwatch.toml", "--as-of", AS_OF, cwd=tmp_path)
    assert_no_traceback(proc)
    assert "1 text(s) longer than 200 characters" in proc.stderr
    facts = _report_texts(tmp_path)
    by_id = {ref.rsplit(":", 1)[1]: f for ref, f in facts.items()}
    assert by_id["2"]["category"] == "employment"
    assert by_id["1"]["category"] != "employment"     # the match lies past the cap
    assert by_id["1"]["text"] == late                 # the stored text is whole


# -- 7. timestamps out of range -----------------------------------------------------------

@pytest.mark.parametrize("raw", ["Infinity", "1e400", "1e20", "-62135596801", '"9999-12-31T23:59:59-01:00"',
                                 "NaN", "9" * 400])
def test_out_of_range_timestamp_in_jsonl_is_a_warning_naming_line_and_field(tmp_path, raw):
    (tmp_path / "notes.jsonl").write_text(
        '{"id": 1, "text": "works at Google", "created_at": "2026-01-01"}\n'
        f'{{"id": 2, "text": "lives in Paris", "created_at": "2026-01-01", "updated_at": {raw}}}\n')
    config(tmp_path, jsonl_source())
    proc = run("audit", "--config", "memwatch.toml", "--as-of", AS_OF, "--format", "json", cwd=tmp_path)
    assert_no_traceback(proc)
    assert "notes.jsonl:2" in proc.stderr and "updated_at" in proc.stderr and "ignored" in proc.stderr
    assert len(json.loads(proc.stdout)["facts"]) == 2


def test_out_of_range_timestamp_in_sqlite_is_a_warning(tmp_path):
    import sqlite3
    store = make_store(tmp_path / "bot.db", n=5)
    conn = sqlite3.connect(store)
    conn.execute("UPDATE memories SET created_at = '9999-12-31T23:59:59-01:00' WHERE id = 1")
    conn.execute("UPDATE memories SET created_at = 1e20 WHERE id = 2")
    conn.commit()
    conn.close()
    config(tmp_path, sqlite_source())
    proc = run("audit", "--config", "memwatch.toml", "--as-of", AS_OF, "--format", "json", cwd=tmp_path)
    assert_no_traceback(proc)
    assert len(json.loads(proc.stdout)["facts"]) == 5


@pytest.mark.parametrize("as_of", ["99999999999999999999", "inf", "-62135596801", "10000-01-01"])
def test_out_of_range_as_of_is_rejected(tmp_path, as_of):
    make_store(tmp_path / "bot.db", n=3)
    proc = run("audit", "bot.db", "--overlay", "o.db", "--as-of", as_of, cwd=tmp_path)
    assert_clean_error(proc, "--as-of")


# -- 8. hostile JSON ----------------------------------------------------------------------

def test_hostile_jsonl_lines_are_skipped_with_a_warning(tmp_path):
    _jsonl(tmp_path / "notes.jsonl", '{"id": 1, "text": "works at Google", "created_at": "2026-01-01"}',
           deep_json(100_000), huge_int_json(5000),
           '{"id": 4, "text": "lives in Paris", "created_at": "2026-01-01"}')
    config(tmp_path, jsonl_source())
    proc = run("audit", "--config", "memwatch.toml", "--as-of", AS_OF, "--format", "json", cwd=tmp_path)
    assert_no_traceback(proc)
    assert "notes.jsonl:2" in proc.stderr and "notes.jsonl:3" in proc.stderr
    assert sorted(f["ref"].rsplit(":", 1)[1] for f in json.loads(proc.stdout)["facts"]) == ["1", "4"]


@pytest.mark.parametrize("body", [deep_json(100_000), "[" + huge_int_json(5000) + "]"])
def test_hostile_json_document_is_one_line_exit_2(tmp_path, body):
    (tmp_path / "notes.json").write_text(body)
    proc = run("audit", "notes.json", "--overlay", "o.db", cwd=tmp_path)
    assert_clean_error(proc, "notes.json")


def test_hostile_json_document_as_configured_source(tmp_path):
    (tmp_path / "notes.json").write_text("[" + huge_int_json(5000) + "]")
    config(tmp_path, jsonl_source(path="notes.json"))
    proc = run("audit", "--config", "memwatch.toml", cwd=tmp_path)
    assert_clean_error(proc, "notes.json")


# -- 10. the rest of the choke point's cases ------------------------------------------------

def test_undo_with_a_23_digit_id_is_one_line_exit_2(tmp_path):
    make_store(tmp_path / "bot.db", n=3)
    config(tmp_path, sqlite_source())
    proc = run("undo", "12345678901234567890123", "--config", "memwatch.toml", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "12345678901234567890123" in proc.stderr and "unexpected" not in proc.stderr


@pytest.fixture
def tiny_disk(tmp_path):
    """A 600 KiB tmpfs (needs root and mount; the attack ran as root too)."""
    import subprocess
    mnt = tmp_path / "disk"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(mnt)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (not root)")
    yield mnt
    subprocess.run(["umount", str(mnt)], capture_output=True)


@pytest.mark.root
def test_overlay_on_a_full_disk_is_one_line_exit_2(tmp_path, tiny_disk):
    make_store(tmp_path / "big.db", n=2000)
    for _ in range(2):       # the second run meets the half-written overlay the first left
        proc = run("audit", "big.db", "--overlay", tiny_disk / "o.db", "--format", "json", cwd=tmp_path)
        assert_clean_error(proc, "disk holding the overlay is full")


def test_report_trend_to_an_unwritable_path_is_exit_2_not_the_gate_code(tmp_path):
    make_store(tmp_path / "bot.db", n=3)
    config(tmp_path, sqlite_source())
    assert run("audit", "--config", "memwatch.toml", "--as-of", AS_OF, cwd=tmp_path).returncode in (0, 1)
    (tmp_path / "afile").write_text("")
    proc = run("report", "--trend", "--config", "memwatch.toml", "--output", "afile/x.json", cwd=tmp_path)
    assert_clean_error(proc, "afile/x.json")


def test_every_detector_layer_reads_at_most_max_text_chars():
    """The slots and the learned layer see a 1 MB text by its first max_text_chars
    (the learned layer's n-grams over whole texts took 6 s per megabyte)."""
    from memwatch_overlay.overlay.detect.blocks import make_detector
    from memwatch_overlay.overlay.detect.detector import FactView
    from memwatch_overlay.rules.config import parse_config

    detector = make_detector(parse_config({"limits": {"max_text_chars": 500}}))
    seen: list[int] = []
    learned = detector.learned
    if learned is not None:
        for name in ("info", "topics_of"):
            original = getattr(learned, name)
            setattr(learned, name, lambda text, *a, _o=original, **k: (seen.append(len(text)), _o(text, *a, **k))[1])
    big = "she works at Google and lives in Paris. " * 25_000
    old = FactView("s:t:1", "u1", None, big, "employment", 1.0)
    new = FactView("s:t:2", "u1", None, "she works at Apple now. " + big, "employment", 2.0)
    reading = detector.read(new)
    assert max((len(s.evidence or "") for s in reading.slots), default=0) <= 500
    detector.index_terms(new)
    detector.compare(new, [old])
    assert seen and all(n <= 500 for n in seen), seen
