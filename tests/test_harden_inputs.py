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


def test_device_as_target_is_refused(tmp_path):
    proc = run("audit", "/dev/zero", "--overlay", "o.db", cwd=tmp_path, timeout=30)
    assert_clean_error(proc, "device")
