"""Zero-config audits of the SQLite fixture stores, checked item by item against their manifests.

Each store under tests/fixtures/agent-stores/ was written by the framework's own code; its
manifest lists the planted memories with source pk, user, category and intended age at
`reference_time`. The audit runs with no config at that time. Expected labels come from
overlay.scoring applied to the manifest's category and age (plus an expiry the store
itself records, as the manifest describes it), never from per-item literals.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from fixture_stores import of_kind

from memwatch_overlay.connectors.recognize import detect
from memwatch_overlay.overlay.engine.audit import audit
from memwatch_overlay.overlay.engine.scoring import (
    DAY,
    DEFAULT_HALF_LIVES,
    CategoryPolicy,
    score_fact,
)
from memwatch_overlay.core.timeparse import parse_timestamp, to_iso

AGENT_STORES = Path(__file__).parent / "fixtures" / "agent-stores"

# framework -> (preset detection must pick, store files audited one by one)
SQLITE_STORES = {name: (f.preset, list(f.stores)) for name, f in of_kind("sqlite").items()}
# Items whose audit category equals the manifest's, measured with the shipped default rules
# (mem0 takes the category its vector payload carries). A rule change may not lose any.
MIN_CATEGORY_MATCHES = {name: f.min_category_matches for name, f in of_kind("sqlite").items()}
# intended_time = reference_time - age_days - a 0..300 minute offset (manifest conventions)
AGE_SLACK_DAYS = 300 / 1440 + 1e-6


def manifest(framework: str) -> dict:
    return json.loads((AGENT_STORES / framework / "manifest.json").read_text())


def reference_time(framework: str) -> float:
    return parse_timestamp(manifest(framework)["reference_time"])


def pk_key(file: str | None, pk: dict) -> tuple:
    return file, json.dumps({k: str(v) for k, v in pk.items()}, sort_keys=True)


def item_key(framework: str, item: dict, source: dict | None = None) -> tuple:
    source = source or item["source"]
    return pk_key(source.get("file") if framework == "memlife" else None, source["pk"])


class Audited:
    """One framework's store(s) audited at the manifest's reference time."""

    def __init__(self, framework: str, root: Path, overlay_dir: Path):
        self.framework = framework
        self.root = root
        self.facts: dict[tuple, dict] = {}
        self.contradictions: list[dict] = []
        self.summaries: list[dict] = []
        self.presets: list[str | None] = []
        ref = reference_time(framework)
        for i, file in enumerate(SQLITE_STORES[framework][1]):
            result = audit(str(root / file), as_of=ref, overlay_path=str(overlay_dir / f"overlay{i}.db"))
            try:
                for fact in result.iter_facts():
                    self.facts[pk_key(file if framework == "memlife" else None, fact["pk"])] = fact
                self.contradictions.extend(result.contradictions())
                self.summaries.append(result.summary)
                self.presets.extend(s.preset for s in result.sources)
            finally:
                result.close()

    def fact(self, item: dict, source: dict | None = None) -> dict:
        key = item_key(self.framework, item, source)
        assert key in self.facts, f"{item['item_id']}: no fact with pk {key} (have {len(self.facts)} facts)"
        return self.facts[key]


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> Path:
    """A copy of every fixture store: even a read-only reader of a WAL-mode database
    creates -wal/-shm files beside it, which must not land in the repository."""
    root = tmp_path_factory.mktemp("agent-stores") / "agent-stores"
    shutil.copytree(AGENT_STORES, root)
    return root


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    """Audit a copy of each framework's fixture folder once per module."""
    cache: dict[str, Audited] = {}

    def get(framework: str) -> Audited:
        if framework not in cache:
            base = tmp_path_factory.mktemp(framework)
            root = base / "store"
            shutil.copytree(AGENT_STORES / framework, root)
            cache[framework] = Audited(framework, root, base)
        return cache[framework]
    return get


def source_expiry(framework: str, m: dict, item: dict) -> float | None:
    """The expiry the store itself records for an item, as the manifest describes it."""
    if framework == "langgraph" and item.get("expires_at"):
        return parse_timestamp(item["expires_at"])
    if framework == "mem0" and item.get("expiration_date_in_vector_payload"):
        if item["item_id"] in m.get("deleted_items", []):
            return None   # Memory.delete() removed the vector point, and its expiry with it
        day = dt.date.fromisoformat(item["expiration_date_in_vector_payload"]) + dt.timedelta(days=1)
        return dt.datetime(day.year, day.month, day.day, tzinfo=dt.timezone.utc).timestamp()  # valid through the date
    if framework == "memlife" and item["item_id"] in m.get("expired_items", []):
        return reference_time(framework)   # retired in the source before the reference time
    return None


def expected_label(framework: str, m: dict, item: dict, category: str) -> str:
    ref = parse_timestamp(m["reference_time"])
    learned = ref - item["age_days"] * DAY
    return score_fact(ref, learned, CategoryPolicy(DEFAULT_HALF_LIVES[category]),
                      expires_at=source_expiry(framework, m, item)).label


FRAMEWORKS = list(SQLITE_STORES)


# -- detection -----------------------------------------------------------------------------

@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_detection_picks_the_framework_preset(stores, framework):
    preset, files = SQLITE_STORES[framework]
    for file in files:
        det = detect(str(stores / framework / file))
        assert det.matches, f"{framework}/{file}: nothing matched"
        assert det.matches[0].preset == preset, [(m.preset, m.score) for m in det.matches]
        others = [m for m in det.matches[1:] if m.score >= det.matches[0].score]
        assert not others, f"{framework}/{file}: tie with {[m.preset for m in others]}"


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_audit_records_the_detected_preset(audited, framework):
    assert set(audited(framework).presets) == {SQLITE_STORES[framework][0]}


# -- every manifest item ---------------------------------------------------------------------

@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_manifest_item_is_a_fact_with_its_source_pk(audited, framework):
    a = audited(framework)
    m = manifest(framework)
    assert len(m["items"]) == 33
    for item in m["items"]:
        fact = a.fact(item)
        assert fact["pk"] == {k: str(v) for k, v in item["source"]["pk"].items()}
        assert fact["table"] == item["source"]["table"]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_ages_follow_the_stored_timestamps(audited, framework):
    a = audited(framework)
    for item in manifest(framework)["items"]:
        fact = a.fact(item)
        assert item["age_days"] - 1e-6 <= fact["age_days"] <= item["age_days"] + AGE_SLACK_DAYS, \
            (item["item_id"], fact["age_days"], item["age_days"])


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_labels_follow_the_formula_on_manifest_category_and_age(audited, framework):
    a = audited(framework)
    m = manifest(framework)
    wrong = []
    for item in m["items"]:
        fact = a.fact(item)
        # The formula on the manifest's category; where the rules chose another category
        # the audit must still be right for the category it chose (counted separately below).
        category = item["category"] if fact["category"] == item["category"] else fact["category"]
        want = expected_label(framework, m, item, category)
        if fact["label"] != want:
            wrong.append((item["item_id"], category, item["age_days"], fact["label"], want))
    assert not wrong


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_categories_match_the_manifest(audited, framework):
    a = audited(framework)
    items = manifest(framework)["items"]
    matched = [i["item_id"] for i in items if a.fact(i)["category"] == i["category"]]
    missed = [(i["item_id"], i["category"], a.fact(i)["category"]) for i in items
              if a.fact(i)["category"] != i["category"]]
    assert len(matched) >= MIN_CATEGORY_MATCHES[framework], missed


@pytest.mark.parametrize("framework", [n for n, f in of_kind("sqlite").items() if f.subjects])
def test_subject_is_the_manifest_user(audited, framework):
    a = audited(framework)
    m = manifest(framework)
    for item in m["items"]:
        if item["item_id"] in m.get("deleted_items", []):
            continue   # mem0: a deleted memory's user went with its vector point (see test below)
        assert a.fact(item)["subject"] == item["user"], item["item_id"]


def test_crewai_has_no_subject_column(audited):
    # task_description is free text; the preset does not guess a user from it.
    assert {f["subject"] for f in audited("crewai").facts.values()} == {None}


# -- native states the stores record themselves -------------------------------------------------

def _ref(fact: dict, pk: dict) -> str:
    return ":".join([fact["source"], fact["table"], *[str(v) for v in pk.values()]])


def test_mem0_update_contradicts_the_version_it_replaced(audited):
    a = audited("mem0")
    native = [i for i in manifest("mem0")["items"]
              if i["expected"]["contradicted_by"]
              and i["expected"]["contradicted_by"].get("event") == "UPDATE"
              and i["expected"]["contradicted_by"]["memory_id"] == i["memory_id"]]
    assert len(native) >= 2
    for item in native:
        older = a.fact(item)
        newer_src = item["expected"]["contradicted_by"]
        newer = a.fact(item, newer_src)
        newer_ref = _ref(newer, newer_src["pk"])
        assert older["status"] == "contradicted"
        assert newer_ref in older["contradicted_by"]
        assert newer["status"] == "active" and newer["contradicted_by"] == []
        flags = [c for c in a.contradictions if c["older"] == older["ref"] and c["newer"] == newer_ref]
        assert len(flags) == 1
        assert flags[0]["kind"] == "value" and flags[0]["confidence"] == 1.0
        assert "mem0 UPDATE" in flags[0]["evidence"] and newer_src["pk"]["id"] in flags[0]["evidence"]


def test_mem0_delete_marks_the_memory_deleted(audited):
    a = audited("mem0")
    m = manifest("mem0")
    deleted = [i for i in m["items"] if i["item_id"] in m["deleted_items"]]
    assert deleted
    for item in deleted:
        assert a.fact(item)["status"] == "deleted"
    live = [i for i in m["items"] if i["item_id"] not in m["deleted_items"]]
    assert all(a.fact(i)["status"] in ("active", "contradicted") for i in live)
    # deleted facts are reported but not counted among live ones
    assert a.summaries[0]["deleted"] == len(deleted)
    assert a.summaries[0]["total"] == len(a.facts) - len(deleted)


def test_mem0_expiration_date_comes_from_the_vector_payload(audited):
    a = audited("mem0")
    m = manifest("mem0")
    with_expiry = [i for i in m["items"] if i.get("expiration_date_in_vector_payload")
                   and i["item_id"] not in m["deleted_items"]]
    assert with_expiry
    for item in with_expiry:
        assert a.fact(item)["expires_at"] == to_iso(source_expiry("mem0", m, item))
    others = [i for i in m["items"] if not i.get("expiration_date_in_vector_payload")]
    assert all(a.fact(i)["expires_at"] is None for i in others)


def test_memlife_superseded_by_is_a_contradiction(audited):
    a = audited("memlife")
    native = [i for i in manifest("memlife")["items"] if "superseded in-source" in i.get("note", "")]
    assert len(native) >= 2
    for item in native:
        older = a.fact(item)
        newer_src = item["expected"]["contradicted_by"]
        newer = a.fact(item, newer_src)
        assert older["status"] == "contradicted"
        assert newer["ref"] in older["contradicted_by"]
        flag = [c for c in a.contradictions if c["older"] == older["ref"] and c["newer"] == newer["ref"]]
        assert len(flag) == 1 and flag[0]["kind"] == "value" and "superseded_by" in flag[0]["evidence"]


def test_memlife_retired_fact_is_expired_by_the_source(audited):
    a = audited("memlife")
    m = manifest("memlife")
    retired = [i for i in m["items"] if i["item_id"] in m["expired_items"]]
    assert retired
    for item in retired:
        fact = a.fact(item)
        assert fact["label"] == "expired" and fact["expired_by"] == "source"
        assert fact["status"] == "active"
        assert parse_timestamp(fact["expires_at"]) <= reference_time("memlife")
        # by age alone it would not be expired: the source's verdict decides
        policy = CategoryPolicy(DEFAULT_HALF_LIVES[item["category"]])
        assert score_fact(reference_time("memlife"), reference_time("memlife") - item["age_days"] * DAY,
                          policy).label != "expired"


def test_langgraph_expires_at_decides_expiry(audited):
    a = audited("langgraph")
    ref = reference_time("langgraph")
    with_ttl = [i for i in manifest("langgraph")["items"] if i.get("expires_at")]
    assert {i["expired_at_reference_time"] for i in with_ttl} == {True, False}
    for item in with_ttl:
        fact = a.fact(item)
        assert parse_timestamp(fact["expires_at"]) == parse_timestamp(item["expires_at"])
        if item["expired_at_reference_time"]:
            assert fact["label"] == "expired" and fact["expired_by"] == "source"
            assert parse_timestamp(item["expires_at"]) < ref
        else:
            assert fact["expired_by"] is None and fact["label"] != "expired"


def test_openai_agents_facts_are_user_messages_only(audited, stores):
    a = audited("openai-agents")
    items = manifest("openai-agents")["items"]
    replies = {item_key("openai-agents", i, i["assistant_reply_row"]) for i in items}
    assert replies and not replies & set(a.facts)
    conn = sqlite3.connect(stores / "openai-agents" / "agent_sessions.db")
    try:
        users = conn.execute("SELECT count(*) FROM agent_messages "
                             "WHERE json_extract(message_data, '$.role') = 'user'").fetchone()[0]
        total = conn.execute("SELECT count(*) FROM agent_messages").fetchone()[0]
    finally:
        conn.close()
    assert 0 < users < total
    assert len(a.facts) == users
    for item in items:   # the stored text is the user's own utterance
        assert a.fact(item)["text"] == item["utterance"]


def test_crewai_text_is_the_first_suggestion(audited):
    a = audited("crewai")
    for item in manifest("crewai")["items"]:
        assert a.fact(item)["text"].endswith(item["text"])


# -- read-only ----------------------------------------------------------------------------------

def _snapshot(folder: Path) -> dict[str, tuple[str, int]]:
    """Bytes and mtime of every file but SQLite's -shm (the WAL index every reader updates)."""
    return {str(p.relative_to(folder)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.name.endswith("-shm")}


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_audit_leaves_the_store_untouched(agent_store, tmp_path, framework):
    folder = agent_store(framework)    # a writable copy: a write would succeed if attempted
    before = _snapshot(folder)
    for i, file in enumerate(SQLITE_STORES[framework][1]):
        result = audit(str(folder / file), as_of=reference_time(framework),
                       overlay_path=str(tmp_path / f"ov{i}.db"))
        assert result.summary["total"] > 0
        result.close()
    after = _snapshot(folder)
    assert {k: v for k, v in after.items() if k in before} == before
    # The only new files allowed are SQLite's own WAL sidecars, which any reader of a
    # WAL-mode database creates; the -wal must stay empty (nothing was written).
    new = set(after) - set(before)
    assert all(n.endswith("-wal") for n in new), new
    assert all((folder / n).stat().st_size == 0 for n in new)
