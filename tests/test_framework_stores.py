"""Zero-config audits of stores the frameworks' own code wrote (tests/frameworkstores.py).

For every store: each planted memory of tests/storeplan.py comes out under its own key with
the right subject, exactly the planted contradictions are found (plus the framework's own
verdicts, such as mem0's UPDATE), none across users, and a native TTL expires what it should.
The console script runs in a subprocess, as a user would run it.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import frameworkstores as fs
import storeplan as plan
from storegen import run

pytestmark = [pytest.mark.integrations, pytest.mark.slow]
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


def audit_json(target, cwd: Path, *extra) -> tuple[dict, str]:
    proc = run("audit", str(target), "--as-of", plan.REFERENCE_ISO, "--overlay", cwd / "overlay.db",
               "--format", "json", *extra, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout), proc.stderr


def by_item(report: dict, pks: dict[str, dict]) -> dict[str, dict]:
    """item id -> its fact in the report, found by the store's own primary key."""
    facts = {json.dumps(f["pk"], sort_keys=True): f for f in report["facts"]}
    out = {}
    for item, pk in pks.items():
        key = json.dumps({k: str(v) for k, v in pk.items()}, sort_keys=True)
        assert key in facts, f"{item} ({pk}) not in the audit"
        out[item] = facts[key]
    return out


def check_plan(report: dict, pks: dict, subject_of=lambda user: user, extra_pairs=(), updated=True,
               deletes=True) -> dict[str, dict]:
    """The assertions every framework store must pass; returns item -> fact.

    Builders that delete DELETED_ITEM through the framework leave it out of `pks` (then no
    live fact may hold its text) or keep it where the store keeps a trace (mem0's history:
    then its fact must be `deleted`)."""
    facts = by_item(report, pks)
    for item, fact in facts.items():
        if fact["status"] != "deleted":     # deleted before the overlay first saw it: mem0 keeps no user
            assert fact["subject"] == subject_of(plan.BY_ID[item].user), (item, fact["subject"])
    gone = plan.BY_ID[plan.DELETED_ITEM]
    if plan.DELETED_ITEM in facts:
        assert (facts[plan.DELETED_ITEM]["status"] == "deleted") is deletes
    else:
        assert not [f for f in report["facts"] if f["status"] != "deleted" and f["text"] == gone.text]
    ref_item = {f["ref"]: item for item, f in facts.items()}
    by_ref = {f["ref"]: f for f in report["facts"]}
    found = set()
    for c in report["contradictions"]:
        older, newer = by_ref[c["older"]], by_ref[c["newer"]]
        assert older["subject"] == newer["subject"], f"cross-subject contradiction: {c}"
        found.add((ref_item.get(c["older"], c["older"]), ref_item.get(c["newer"], c["newer"])))
    assert found == plan.CONTRADICTIONS | set(extra_pairs)
    for older, newer in plan.CONTRADICTIONS:
        assert facts[older]["status"] == "contradicted"
        assert facts[older]["contradicted_by"] == [facts[newer]["ref"]]
    if updated:
        assert facts[plan.UPDATED_ITEM]["text"] == plan.UPDATED_TEXT
    return facts


def check_ttl(facts: dict) -> None:
    for p in plan.ITEMS:
        if p.ttl_days is None or p.item not in facts:
            continue
        fact = facts[p.item]
        assert fact["expires_at"] is not None, p.item
        assert (fact["label"] == "expired") is p.expired, (p.item, fact["label"], fact["expires_at"])


@pytest.mark.parametrize("layout", list(fs.LANGGRAPH_LAYOUTS))
def test_langgraph_sqlite_store_every_namespace_layout(tmp_path, layout):
    pytest.importorskip("langgraph.store.sqlite", reason="pip install 'memwatch-overlay[test-integrations]'")
    pks = fs.langgraph_sqlite(tmp_path / "store.sqlite", layout)
    report, _ = audit_json(tmp_path / "store.sqlite", tmp_path)
    assert [s["preset"] for s in report["sources"]] == ["langgraph"]
    facts = check_plan(report, pks)
    check_ttl(facts)
    # values without a known text field ({"<category>_note": "…"}) are read as their one string
    assert all(not f["text"].startswith("{") for f in facts.values())


def test_langgraph_subject_position_named_in_the_config(tmp_path):
    pytest.importorskip("langgraph.store.sqlite", reason="pip install 'memwatch-overlay[test-integrations]'")
    pks = fs.langgraph_sqlite(tmp_path / "store.sqlite", "user-first")
    (tmp_path / "memwatch.toml").write_text('[[sources]]\nname = "lg"\nconnector = "sqlite"\n'
                                            'path = "store.sqlite"\npreset = "langgraph"\nsubject = "prefix[1]"\n')
    proc = run("audit", "--config", "memwatch.toml", "--as-of", plan.REFERENCE_ISO, "--overlay", "o.db",
               "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    facts = by_item(json.loads(proc.stdout), pks)
    assert {f["subject"] for f in facts.values()} == {"memories", "working"}


@pytest.mark.postgres
def test_langgraph_postgres_store(tmp_path, pg_database):
    pytest.importorskip("langgraph.store.postgres", reason="pip install 'memwatch-overlay[test-integrations]'")
    url = pg_database("memwatch_lgpg")
    pks = fs.langgraph_postgres(url)
    report, _ = audit_json(url, tmp_path)
    assert [s["preset"] for s in report["sources"]] == ["langgraph-postgres"]
    check_ttl(check_plan(report, pks))


def test_mem0_with_qdrant_path_in_the_config(tmp_path):
    pytest.importorskip("mem0", reason="pip install 'memwatch-overlay[test-integrations]'")
    home = tmp_path / "home" / ".mem0"
    home.mkdir(parents=True)
    pks = fs.mem0(home / "history.db", tmp_path / "vectors")
    pks.pop("memory_ids")
    (tmp_path / "memwatch.toml").write_text('[[sources]]\nname = "mem0"\nconnector = "sqlite"\npreset = "mem0"\n'
                                            'path = "home/.mem0/history.db"\nqdrant_path = "vectors"\n')
    proc = run("audit", "--config", "memwatch.toml", "--as-of", plan.REFERENCE_ISO, "--overlay", "o.db",
               "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "no user" not in proc.stderr
    report = json.loads(proc.stdout)
    # mem0's own UPDATE of the violin memory is a native contradiction of its first version
    old_violin = next(f for f in report["facts"] if f["text"] == plan.BY_ID[plan.UPDATED_ITEM].text)
    facts = check_plan(report, pks,
                       extra_pairs={(old_violin["ref"], plan.UPDATED_ITEM)})
    check_ttl(facts)


def test_mem0_deleted_memory_keeps_the_subject_it_had(tmp_path):
    pytest.importorskip("mem0", reason="pip install 'memwatch-overlay[test-integrations]'")
    pks = fs.mem0(tmp_path / "history.db", tmp_path / "qdrant", delete=False)
    memory_ids = pks.pop("memory_ids")
    before, _ = audit_json(tmp_path / "history.db", tmp_path)     # qdrant/ beside history.db: found
    gone = by_item(before, pks)[plan.DELETED_ITEM]
    assert (gone["status"], gone["subject"]) == ("active", "u_farid")
    mem = fs.mem0_memory(tmp_path / "history.db", tmp_path / "qdrant")
    mem.delete(memory_ids[plan.DELETED_ITEM])          # mem0 drops the point that held the user
    fs.mem0_close(mem)
    after, _ = audit_json(tmp_path / "history.db", tmp_path)
    gone = by_item(after, pks)[plan.DELETED_ITEM]
    assert (gone["status"], gone["subject"]) == ("deleted", "u_farid")


def test_mem0_without_its_qdrant_warns_that_users_are_unknown(tmp_path):
    pytest.importorskip("mem0", reason="pip install 'memwatch-overlay[test-integrations]'")
    fs.mem0(tmp_path / "history.db", tmp_path / "elsewhere" / "vectors")
    proc = run("audit", "history.db", "--as-of", plan.REFERENCE_ISO, "--overlay", "o.db", "--format", "json",
               cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "13 live mem0 memories have no user" in proc.stderr
    assert "qdrant_path" in proc.stderr


def test_openai_agents_sqlite_session(tmp_path):
    pytest.importorskip("agents", reason="pip install 'memwatch-overlay[test-integrations]'")
    pks = fs.openai_agents_sqlite(tmp_path / "agents.db")
    report, stderr = audit_json(tmp_path / "agents.db", tmp_path)
    check_plan(report, pks, updated=False, deletes=False)
    assert "single conversation" in stderr      # one session per user here: said, not wrong


def test_per_conversation_sessions_meet_once_mapped_to_users(tmp_path):
    pytest.importorskip("agents", reason="pip install 'memwatch-overlay[test-integrations]'")
    pks = fs.openai_agents_sqlite(tmp_path / "agents.db", fs.per_conversation)
    report, stderr = audit_json(tmp_path / "agents.db", tmp_path)
    assert report["contradictions"] == []          # every fact alone in its conversation
    assert "each of the 14 subjects has a single conversation" in stderr
    (tmp_path / "memwatch.toml").write_text(
        '[[sources]]\nname = "chats"\nconnector = "sqlite"\npreset = "openai-agents"\npath = "agents.db"\n'
        "subject_pattern = '^chat-(?P<subject>u_[a-z]+)-'\n")
    proc = run("audit", "--config", "memwatch.toml", "--as-of", plan.REFERENCE_ISO, "--overlay", "o2.db",
               "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "single conversation" not in proc.stderr
    check_plan(json.loads(proc.stdout), pks, updated=False, deletes=False)


@pytest.mark.postgres
def test_openai_agents_sqlalchemy_session_on_postgres(tmp_path, pg_database):
    pytest.importorskip("agents.extensions.memory", reason="pip install 'memwatch-overlay[test-integrations]'")
    url = pg_database("memwatch_agents")
    pks = fs.openai_agents_postgres(url)
    report, _ = audit_json(url, tmp_path)
    assert [s["preset"] for s in report["sources"]] == ["openai-agents-postgres"]
    check_plan(report, pks, updated=False, deletes=False)


def test_agno_memories(tmp_path):
    pytest.importorskip("agno", reason="pip install 'memwatch-overlay[test-integrations]'")
    pks = fs.agno(tmp_path / "agno.db")
    report, _ = audit_json(tmp_path / "agno.db", tmp_path)
    assert [s["preset"] for s in report["sources"]] == ["agno"]
    facts = check_plan(report, pks)
    assert all(not f["text"].startswith('"') for f in facts.values())     # JSON-typed text decoded
    assert facts[plan.UPDATED_ITEM]["updated_at"] is not None


def test_llamaindex_sqlite_chat_store(tmp_path):
    pytest.importorskip("llama_index.storage.chat_store.sqlite", reason="pip install 'memwatch-overlay[test-integrations]'")
    pks = fs.llamaindex(tmp_path / "chat.db")
    report, _ = audit_json(tmp_path / "chat.db", tmp_path)
    assert [s["preset"] for s in report["sources"]] == ["llamaindex"]
    facts = check_plan(report, pks, updated=False, deletes=False)
    assert len(report["facts"]) == len(plan.ITEMS)          # the assistant's turns are not facts
    assert {f["text"] for f in facts.values()} == {p.utterance for p in plan.ITEMS}


def test_chroma_persistent_client(tmp_path):
    pytest.importorskip("chromadb", reason="pip install 'memwatch-overlay[test-integrations]'")
    pks = fs.chroma(tmp_path / "chroma")
    report, _ = audit_json(tmp_path / "chroma" / "chroma.sqlite3", tmp_path)
    assert [s["preset"] for s in report["sources"]] == ["chroma"]
    facts = check_plan(report, pks)
    assert facts["e.emp.old"]["age_days"] == pytest.approx(plan.BY_ID["e.emp.old"].age_days)


def test_autogen_chromadb_vector_memory(tmp_path):
    pytest.importorskip("autogen_ext.memory.chromadb", reason="pip install 'memwatch-overlay[test-integrations]'")
    pks = fs.autogen(tmp_path / "autogen")
    report, stderr = audit_json(tmp_path / "autogen" / "chroma.sqlite3", tmp_path)
    # no user in AutoGen's metadata: each collection (one per user here) is its own subject
    check_plan(report, pks, subject_of=lambda user: f"prefs_{user}", updated=False, deletes=False)
    assert "'preferences' (14)" in stderr and "aliases" in stderr     # its category is not a category


def test_a_folder_of_framework_stores_each_its_own_source(tmp_path):
    pytest.importorskip("chromadb", reason="pip install 'memwatch-overlay[test-integrations]'")
    pytest.importorskip("langgraph.store.sqlite", reason="pip install 'memwatch-overlay[test-integrations]'")
    data = tmp_path / "data"
    (data / "support").mkdir(parents=True)
    lg = fs.langgraph_sqlite(data / "support" / "store.sqlite")
    ch = fs.chroma(data / "chroma")
    fs.agno(data / "agno.db")
    report, _ = audit_json(data, tmp_path)
    names = {s["name"]: s["preset"] for s in report["sources"]}
    assert names == {"langgraph-support-store": "langgraph", "chroma": "chroma", "agno": "agno"}
    # the same facts come out under the same source names on a second run (stable zero config)
    again, _ = audit_json(data, tmp_path)
    assert {f["ref"] for f in again["facts"]} == {f["ref"] for f in report["facts"]}
    # each store on its own gives what it gives audited alone (comparisons across the stores of
    # one folder are the detection's concern: a zero-config audit compares within a store)
    for source, pks in (("langgraph-support-store", lg), ("chroma", ch)):
        mine = {"facts": [{**f, "contradicted_by": [r for r in f["contradicted_by"] if r.startswith(source + ":")]}
                          for f in report["facts"] if f["source"] == source],
                "contradictions": [c for c in report["contradictions"]
                                   if c["older"].startswith(source + ":") and c["newer"].startswith(source + ":")]}
        check_plan(mine, pks)
