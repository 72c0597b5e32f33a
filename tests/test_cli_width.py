"""At 80 columns (every CI log) times, names, counts and install hints stay whole; only
long texts wrap."""
from __future__ import annotations

import io
import re
import shutil

import pytest
from rich.console import Console

from conftest import AGENT_STORES
from storegen import run

AS_OF = "2026-11-29T15:57:40Z"


@pytest.fixture(scope="module")
def overlay(tmp_path_factory):
    root = tmp_path_factory.mktemp("w")
    shutil.copy(AGENT_STORES / "langgraph" / "langgraph_store.sqlite", root / "lg.sqlite")
    assert run("audit", "lg.sqlite", "--overlay", "o.db", "--as-of", AS_OF, cwd=root).returncode == 0
    return root


def at80(root, *args):
    proc = run(*args, "--overlay", "o.db", cwd=root, COLUMNS="80")
    assert proc.returncode in (0, 1), proc.stderr
    assert max(len(line) for line in proc.stdout.splitlines()) <= 80
    return proc.stdout


def test_status_keeps_the_last_sync_time_whole(overlay):
    out = at80(overlay, "status")
    row = next(line for line in out.splitlines() if "langgraph" in line)
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", row) and "…" not in out


def test_stats_keeps_group_names_and_figures_whole(overlay):
    out = at80(overlay, "stats")
    assert "…" not in out
    names = {line.split()[0] for line in out.splitlines() if re.match(r"^ ?[a-z]", line)}
    assert {"langgraph", "employment", "relationship", "preference"} <= names
    assert re.search(r"relationship +\d+ +\d+ +\d+ +\d+ +\d+ +\d+ +\d+ +\d\.\d\d", out)


def test_the_audit_table_wraps_the_memory_not_subject_label_or_time_left(overlay):
    out = at80(overlay, "report", "--as-of", AS_OF)
    rows = [line for line in out.splitlines() if line.startswith("│ u_")]
    assert rows and all("…" not in line for line in rows)
    assert any(re.search(r"\d+d │$", line) for line in rows)
    assert {"u_priya", "u_tomasz", "u_amara"} <= {line.split("│")[1].strip() for line in rows}


def test_connectors_print_install_hints_whole_on_their_own_lines():
    from memwatch_overlay.overlay.output.listings import render_catalog
    hint = "needs the optional 'postgres' extra: pip install 'memwatch-overlay[postgres]' (missing module psycopg)"
    data = {"connectors": [{"name": "postgres", "description": "Postgres table or read-only SELECT " * 2,
                            "origin": "built-in (memwatch_overlay.connectors.postgres:PostgresConnector)",
                            "available": False, "note": hint}],
            "presets": [{"name": "langgraph-postgres", "kind": "postgres", "description": "LangGraph PostgresStore",
                         "origin": "built-in (x:y)", "available": True, "note": ""}]}
    out = io.StringIO()
    render_catalog(data, Console(file=out, width=80, no_color=True))
    text = out.getvalue()
    assert f"[1] postgres: {hint}" in text.splitlines()         # one line, even past 80 columns
    assert "missing [1]" in text and "langgraph-postgres" in text and "…" not in text


def test_check_at_80_columns_shows_the_memory_text_and_keeps_action_and_key_whole(overlay):
    proc = run("check", "I just moved to Surabaya for my new job at Anthropic", "--subject", "u_priya",
               "--overlay", "o.db", "--as-of", AS_OF, cwd=overlay, COLUMNS="80")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert max(len(line) for line in out.splitlines()) <= 80
    row = next(line for line in out.splitlines() if "UPDATE" in line)
    assert "│ UPDATE │ Priya just" in row and "│ employer │" in row     # the text, not a folded ref
