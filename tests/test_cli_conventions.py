"""Conventions people reach for: `audit -` on a real pipe, --format ndjson / csv, --summary-only,
-q, `python -m memwatch_overlay`, shell completion, one name per option on every command."""
from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys

import click
import pytest

from storegen import EXE, run

AS_OF = "2026-11-29"
LINES = [{"id": str(i), "text": t, "user_id": "u1", "created_at": c} for i, (t, c) in enumerate([
    ("Works at Google as an analyst", "2025-01-01"), ("Just joined Stripe", "2026-11-01"),
    ('Lives in "Jakarta", near Kemang', "2026-10-01")], 1)]


def feed(tmp_path, *args, data=None, **env):
    payload = data if data is not None else "".join(json.dumps(r) + "\n" for r in LINES)
    return subprocess.run([EXE, *map(str, args)], input=payload, capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "COLUMNS": "100", **env}, timeout=120)


def test_audit_dash_reads_json_lines_from_stdin(tmp_path):
    proc = feed(tmp_path, "audit", "-", "--overlay", "o.db", "--as-of", AS_OF, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["summary"]["total"] == 3 and data["sources"][0]["name"] == "stdin"
    assert {f["text"] for f in data["facts"]} == {r["text"] for r in LINES}
    # the same source again, one line fewer: updated in place, the missing line deleted
    again = feed(tmp_path, "audit", "-", "--overlay", "o.db", "--as-of", AS_OF, "--format", "json",
                 data="".join(json.dumps(r) + "\n" for r in LINES[1:]))
    data = json.loads(again.stdout)
    assert data["summary"]["total"] == 2 and data["summary"]["deleted"] == 1
    assert len(data["sources"]) == 1
    bad = feed(tmp_path, "audit", "-", "--overlay", "o.db", data="{not json\n")
    assert bad.returncode == 2 and bad.stderr.startswith("Error: ") and "Traceback" not in bad.stderr


def test_ndjson_csv_and_summary_only(tmp_path):
    assert feed(tmp_path, "audit", "-", "--overlay", "o.db", "--as-of", AS_OF).returncode == 0
    nd = run("report", "--overlay", "o.db", "--as-of", AS_OF, "--format", "ndjson", cwd=tmp_path)
    facts = [json.loads(line) for line in nd.stdout.splitlines()]
    assert nd.returncode == 0 and len(facts) == 3 and {"ref", "freshness", "label"} <= set(facts[0])
    table = run("report", "--overlay", "o.db", "--as-of", AS_OF, "--format", "csv", cwd=tmp_path)
    rows = list(csv.DictReader(io.StringIO(table.stdout)))
    assert len(rows) == 3 and {r["text"] for r in rows} == {r["text"] for r in LINES}    # quotes survive
    by_text = {r["text"]: r for r in rows}
    google = by_text["Works at Google as an analyst"]
    assert google["status"] == "contradicted" and google["contradicted_by"].startswith("stdin:")
    assert float(google["freshness"]) == next(f["freshness"] for f in facts if f["text"] == google["text"])
    summary = run("report", "--overlay", "o.db", "--as-of", AS_OF, "--format", "json", "--summary-only",
                  cwd=tmp_path)
    data = json.loads(summary.stdout)
    assert data["summary_only"] is True and "facts" not in data and data["summary"]["total"] == 3
    assert data["by_category"]["employment"]["total"] == 2 and data["by_source"]["stdin"]["total"] == 3
    wrong = run("report", "--overlay", "o.db", "--summary-only", cwd=tmp_path)
    assert wrong.returncode == 2 and "--summary-only" in wrong.stderr


def test_quiet_leaves_only_errors_on_stderr(tmp_path):
    args = ["audit", "-", "--overlay", "o.db", "--as-of", AS_OF, "--format", "json", "--max-stale", "0",
            "--html", "r.html"]
    loud = feed(tmp_path, *args)
    assert loud.returncode == 1 and "gate:" in loud.stderr and "wrote HTML report" in loud.stderr
    for quiet in (["-q", *args], [*args, "--quiet"]):
        proc = feed(tmp_path, *quiet)
        assert proc.returncode == 1 and proc.stderr == "" and json.loads(proc.stdout)["passed"] is False
    err = feed(tmp_path, "-q", "report", "--overlay", "missing.db")
    assert err.returncode == 2 and err.stderr.startswith("Error: ")


def test_python_dash_m_and_shell_completion(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "memwatch_overlay", "--help"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("Usage: memwatch-overlay")
    script = subprocess.run([EXE], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "_MEMWATCH_OVERLAY_COMPLETE": "bash_source"})
    assert script.returncode == 0 and "_memwatch_overlay_completion()" in script.stdout
    words = subprocess.run([EXE], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "_MEMWATCH_OVERLAY_COMPLETE": "bash_complete",
                                "COMP_WORDS": "memwatch-overlay aud", "COMP_CWORD": "1"})
    assert "audit" in words.stdout
    readme = (__import__("pathlib").Path(__file__).parents[1] / "README.md").read_text()
    assert "_MEMWATCH_OVERLAY_COMPLETE=bash_source" in readme


def test_each_option_has_one_name_and_one_meaning_on_every_command():
    from memwatch_overlay.overlay.cli.main import main

    def commands(group, prefix=""):
        ctx = click.Context(group)
        for name in group.list_commands(ctx):
            cmd = group.get_command(ctx, name)
            yield f"{prefix}{name}", cmd
            if isinstance(cmd, click.Group):
                yield from commands(cmd, f"{prefix}{name} ")

    spellings: dict[str, set] = {}
    for path, cmd in [("", main), *commands(main)]:
        for p in cmd.params:
            if isinstance(p, click.Option):
                for opt in p.opts:
                    spellings.setdefault(opt, set()).add(tuple(sorted(p.opts)))
                if "--overlay" in p.opts or "--db" in p.opts:
                    assert set(p.opts) == {"--overlay", "--db"}, path
    # an option spelled one way is spelled the same way (with the same aliases) everywhere
    assert {o: s for o, s in spellings.items() if len(s) > 1} == {}
