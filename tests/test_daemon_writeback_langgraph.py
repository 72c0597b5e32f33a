"""Issue 6's finish line through real processes: a daemon with `apply = true` expires
LangGraph store items through `expires_at` (in LangGraph's own format), annotates the
rest in the overlay, and `undo` restores every row exactly."""
from __future__ import annotations

import json
import re
import time

from wb_support import copy_langgraph, run_cli, snapshot, write_config

LANGGRAPH_FORMAT = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}\+00:00")
CONFIG = """
[[sources]]
name = "lg"
connector = "sqlite"
path = "langgraph_store.sqlite"
preset = "langgraph"
apply = true

[[actions]]
when = "expired"
do = "expire"

[[actions]]
when = "stale"
do = "annotate"

[[actions]]
when = "aging"
do = "annotate"
"""


def _key(ref: str) -> tuple[str, str]:
    _, _, prefix, key = ref.split(":", 3)
    return prefix, key


def test_daemon_with_apply_expires_langgraph_items_annotates_the_rest_and_undo_restores(tmp_path):
    db = copy_langgraph(tmp_path)
    cfg = write_config(tmp_path, CONFIG)
    original = snapshot(db)
    started = time.time()

    proc = run_cli("daemon", "--config", cfg, "--once", "--log-format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr

    report = json.loads(run_cli("report", "--config", cfg, "--format", "json", cwd=tmp_path).stdout)
    live = [f for f in report["facts"] if f["status"] != "deleted"]
    expired = {f["ref"] for f in live if f["label"] == "expired"}
    annotated_expected = {f["ref"] for f in live if f["label"] in ("aging", "stale")}
    assert expired and annotated_expected

    after = snapshot(db)
    written = {ref for ref in expired if after[_key(ref)] != original[_key(ref)]}
    # every expired item LangGraph did not already expire itself now carries our expires_at
    already = {ref for ref in expired if original[_key(ref)]["expires_at"][1] is not None}
    assert written == expired - already and written
    for ref in written:
        kind, value = after[_key(ref)]["expires_at"]
        assert kind == "text" and LANGGRAPH_FORMAT.fullmatch(value)
        assert {c: v for c, v in after[_key(ref)].items() if c != "expires_at"} == \
            {c: v for c, v in original[_key(ref)].items() if c != "expires_at"}
    # nothing else in the store changed
    assert {k: v for k, v in after.items() if k not in {_key(r) for r in written}} == \
        {k: v for k, v in original.items() if k not in {_key(r) for r in written}}
    # the rest is annotated in the overlay only
    facts = {f["ref"]: f for f in live}
    assert {r for r in annotated_expected if facts[r]["annotations"]} == annotated_expected

    undo = run_cli("undo", "--since", str(started), "--config", cfg, "--format", "json", cwd=tmp_path)
    assert undo.returncode == 0, undo.stderr
    assert snapshot(db) == original
