"""The sync's per-record hot path against the plain reference (tests/scoring_reference.py).

Rows must be the same to the bit: the Records a SQL connector maps, the facts rows the
engine upserts (key, ref, content hash, scores, next change), the scores of a rescore, and
what an audit of the fixture stores leaves in the overlay's facts table.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import random
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from fixture_stores import FIXTURES

from memwatch_overlay.connectors.base import Record
from memwatch_overlay.connectors.recognize import detect, source_from_detection
from memwatch_overlay.connectors.registry import make_connector
from memwatch_overlay.connectors.tabular import RECORD_FIELDS, TableConnector
from memwatch_overlay.overlay.engine.audit import audit
from memwatch_overlay.overlay.engine.scoring import (
    DAY,
    CategoryPolicy,
    ConfidencePolicy,
    Thresholds,
)
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.overlay.engine.sync import SyncEngine, content_hash, pk_json
from memwatch_overlay.core.timeparse import parse_timestamp
from memwatch_overlay.rules.config import Config, SourceConfig
from scoring_reference import (ref_content_hash, ref_engine_score, ref_fact_row, ref_next_change_at, ref_pk_json,
                               ref_row_to_record, ref_score_row, same)

AGENT_STORES = Path(__file__).parent / "fixtures" / "agent-stores"
FIXTURE_STORES = [f"{name}/{store}" for name, f in FIXTURES.items() for store in f.stores]


def reference_time(store: str) -> float:
    manifest = json.loads((AGENT_STORES / store.split("/")[0] / "manifest.json").read_text())
    return parse_timestamp(manifest["reference_time"])


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> Path:
    """A copy of the fixture stores (readers of a WAL database create files beside it)."""
    root = tmp_path_factory.mktemp("stores") / "agent-stores"
    shutil.copytree(AGENT_STORES, root)
    return root


def custom_config() -> Config:
    """Not the defaults: a TTL, other thresholds and another confidence policy."""
    base = Config()
    categories = {**base.categories, "employment": CategoryPolicy(180, ttl_days=90),
                  "preference": CategoryPolicy(365, ttl_days=400), "general": CategoryPolicy(200.5)}
    return dataclasses.replace(base, categories=categories, thresholds=Thresholds(0.85, 0.55, 0.25),
                               lifecycle=ConfidencePolicy(180.0, 0.2, 0.7))


def assert_same_rows(got: list[tuple], want: list[tuple]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert same(g, w), (g, w)


# -- the Records of a SQL connector ------------------------------------------------------------
def test_records_are_built_in_record_field_order():
    assert [f.name for f in dataclasses.fields(Record)][:len(RECORD_FIELDS)] == list(RECORD_FIELDS)


def random_row(rnd: random.Random, i: int) -> dict:
    when = rnd.choice(["2025-07-04 17:11:46", "2026-01-02T03:04:05.123456+00:00", "2024-02-29", 1.7e9,
                       1_700_000_000_000, "not a time", "", None, b"2025-01-01"])
    return {
        "id": rnd.choice([i, str(i), f"k-{i}", b"bytes-key", None, 1.5]),
        "body": rnd.choice(["Lives in Berlin", "  ", "", None, b"bytes text", 42, "caf\u00e9 \u2019quoted\u2019"]),
        "who": rnd.choice(["u1", "", None, b"u2", 7]),
        "k": rnd.choice(["employer", "city", None, ""]),
        "cat": rnd.choice([None, "employment", "preference", ""]),
        "n": rnd.choice([None, 0, 3, "5", "x", 2.7, b"1"]),
        "c_at": when,
        "u_at": rnd.choice([when, when, None, "2026-05-05 05:05:05", "bad"]),
        "a_at": rnd.choice([None, when, 1.69e9]),
        "e_at": rnd.choice([None, "2030-01-01", "never"]),
        "meta": rnd.choice([None, '{"user": "u9", "tags": ["a"], "cat": "contact"}', '{"user": null}', "{bad",
                            b'{"user": "u5"}', "[1, 2]"]),
    }


@pytest.mark.parametrize("mapped", ["plain", "json paths"])
def test_row_to_record_equals_the_reference_on_random_rows(tmp_path, mapped):
    db = tmp_path / "s.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE mem (id, body, who, k, cat, n, c_at, u_at, a_at, e_at, meta)")
    con.commit()
    con.close()
    paths = {"subject": "meta.user", "category": "meta.cat"} if mapped == "json paths" else \
        {"subject": "who", "category": "cat"}
    source = SourceConfig(name="s", connector="sqlite", path=str(db), table="mem", id=["id"], text="body", key="k",
                          created_at="c_at", updated_at="u_at", accessed_at="a_at", access_count="n",
                          expires_at="e_at", **paths)
    fast, ref = make_connector(source), make_connector(source)
    with fast, ref:
        mapping, pks, *_ = fast._plan()
        rnd = random.Random(5)
        made = 0
        for i in range(3000):
            row = random_row(rnd, i)
            got = fast.row_to_record(dict(row), pks, mapping)
            want = ref_row_to_record(ref, dict(row), pks, mapping)
            assert got == want and repr(got) == repr(want), row
            made += got is not None
        assert fast.warnings == ref.warnings and fast.warnings
        assert 0 < made < 3000
        # a mapping given per call (as presets do) is planned again, not mixed up with the last one
        other = {**mapping, "text": ("who", [])}
        row = random_row(rnd, 0) | {"who": "from who"}
        assert fast.row_to_record(row, pks, other).text == "from who"
        assert fast.row_to_record(row, pks, mapping) == ref_row_to_record(ref, row, pks, mapping)


def read_records(path: Path) -> tuple[list[Record], list[str]]:
    det = detect(str(path))
    conn = make_connector(source_from_detection(det, name=path.stem))
    with conn:
        records = list(conn.read(None))
    return records, conn.warnings


@pytest.mark.parametrize("store", FIXTURE_STORES)
def test_fixture_records_equal_the_reference(stores, monkeypatch, store):
    got, got_warnings = read_records(stores / store)
    with monkeypatch.context() as m:
        m.setattr(TableConnector, "row_to_record",
                  lambda self, row, pks, mapping: ref_row_to_record(self, row, pks, mapping))
        want, want_warnings = read_records(stores / store)
    assert got and got == want and repr(got) == repr(want)
    assert got_warnings == want_warnings


# -- the facts rows the engine upserts ------------------------------------------------------------
def synthetic_records(rnd: random.Random, as_of: float, n: int) -> list[Record]:
    """Records with everything score_fact looks at: access, source expiry, deletions, updates."""
    out = []
    for i in range(n):
        created = None if rnd.random() < 0.1 else as_of - rnd.uniform(-3, 4000) * DAY
        updated = rnd.choice([None, None, created, as_of - rnd.uniform(0, 500) * DAY])
        out.append(Record(
            source="bot", table=rnd.choice(["facts", "notes"]),
            pk=rnd.choice([{"id": str(i)}, {"user": f"u{i % 7}", "key": f"k\u00e9{i}"}, {"path": f'a["{i}"]'}]),
            text=rnd.choice(["Works at Acme", "Lives in Paris", "likes tea", "email is a@b.c", f"note {i}"]),
            subject=rnd.choice([None, "u1", "u2"]), key=rnd.choice([None, "employer", "city", "food"]),
            created_at=created, updated_at=updated,
            accessed_at=rnd.choice([None, None, as_of - rnd.uniform(0, 900) * DAY]),
            access_count=rnd.choice([0, 0, 1, 4, 30, 10_000]),
            category=rnd.choice([None, None, "employment", "preference", "skill"]),
            expires_at=rnd.choice([None, None, as_of - rnd.uniform(0, 50) * DAY, as_of + rnd.uniform(0, 50) * DAY]),
            status=rnd.choice(["active", "active", "deleted", "contradicted"])))
    return out


def fact_rows(engine: SyncEngine, records: list[Record], now: float, as_of: float) -> tuple[list, list]:
    fast = engine._row_builder(3, 8, now, as_of)
    got = [fast(copy.copy(rec)) for rec in records]
    want = [ref_fact_row(engine, copy.copy(rec), 3, 8, now, as_of) for rec in records]
    return got, want


@pytest.mark.parametrize("config", [Config(), custom_config()], ids=["defaults", "custom"])
@pytest.mark.parametrize("clock", ["past", "ahead"])
def test_fact_rows_equal_the_reference(tmp_path, config, clock):
    store = OverlayStore(str(tmp_path / "o.db"))
    try:
        engine = SyncEngine(store, config)
        as_of = parse_timestamp("2026-11-29")
        now = as_of + 3600 if clock == "past" else as_of - 5 * DAY   # "ahead": --as-of after the clock
        got, want = fact_rows(engine, synthetic_records(random.Random(17), as_of, 6000), now, as_of)
        assert_same_rows(got, want)
        assert {row.label for row in got} == {"fresh", "aging", "stale", "expired"}      # labels
        has_ttl = any(p.ttl_days is not None for p in config.categories.values())
        assert {row.expired_by for row in got} == ({None, "ttl", "source"} if has_ttl else {None, "source"})  # expired_by
    finally:
        store.close()


@pytest.mark.parametrize("store", FIXTURE_STORES)
def test_fixture_fact_rows_equal_the_reference(stores, tmp_path, store):
    records, _ = read_records(stores / store)
    overlay = OverlayStore(str(tmp_path / "o.db"))
    try:
        for config in (Config(), custom_config()):
            engine = SyncEngine(overlay, config)
            as_of = reference_time(store)
            got, want = fact_rows(engine, records, time.time(), as_of)
            assert_same_rows(got, want)
    finally:
        overlay.close()


def test_content_hash_and_pk_json_equal_the_reference():
    rnd = random.Random(4)
    for rec in synthetic_records(rnd, 1.8e9, 3000):
        assert content_hash(rec) == ref_content_hash(rec)
        assert pk_json(rec.pk) == ref_pk_json(rec.pk)
    for pk in [{}, {"id": 1}, {"a": None, "b": "x"}, {"\u00e9": "\u2603 \"q\" \\ \n"}, {"k": 1.5}, {"x": "y"}]:
        assert pk_json(pk) == ref_pk_json(pk)


# -- a rescore, and what an audit leaves in the overlay ---------------------------------------------
@pytest.mark.parametrize("config", [Config(), custom_config()], ids=["defaults", "custom"])
def test_engine_score_and_score_row_equal_the_reference(tmp_path, config):
    store = OverlayStore(str(tmp_path / "o.db"))
    try:
        engine = SyncEngine(store, config)
        rnd = random.Random(23)
        as_of = parse_timestamp("2026-11-29")
        for _ in range(5000):
            when = [None if rnd.random() < 0.3 else as_of - rnd.uniform(-2, 3000) * DAY for _ in range(3)]
            row = {"category": rnd.choice(["employment", "preference", "general", "skill", "unknown"]),
                   "created_at": when[0], "updated_at": when[1], "refreshed_at": when[2],
                   "first_seen": as_of - rnd.uniform(0, 100) * DAY, "access_count": rnd.choice([0, 2, 9, None]),
                   "accessed_at": rnd.choice([None, as_of - rnd.uniform(0, 99) * DAY]),
                   "expires_at": rnd.choice([None, None, as_of + rnd.uniform(-9, 9) * DAY]),
                   "confirmations": rnd.choice([0, 0, 1, 2, 5])}
            assert same(engine.score_row(row, as_of), ref_score_row(config, row, as_of)), row
            # a confirmation apart from learning (and none: confirmed when learned)
            confirmed = rnd.choice([None, when[0], as_of - rnd.uniform(0, 900) * DAY])
            args = (row["category"], when[0], as_of, row["access_count"], row["accessed_at"], row["expires_at"],
                    confirmed, row["confirmations"])
            assert same(engine.score(*args), ref_engine_score(config, *args)), args
    finally:
        store.close()


SCORE_COLUMNS = ("freshness", "label", "age_days", "days_left", "days_until_expired", "expired_by", "confidence")


def stored_scores_equal_reference(store: OverlayStore, config: Config, as_of: float) -> int:
    """Every live fact's stored scores and next change against the reference; returns how many."""
    rows = store.conn.execute(
        "SELECT * FROM facts WHERE status IN ('active', 'contradicted') ORDER BY id").fetchall()
    for row in rows:
        want = ref_score_row(config, row, as_of)
        got = tuple(row[c] for c in SCORE_COLUMNS)
        assert same(got, want[:7]), (dict(row), want)
        assert row["scored_as_of"] == as_of
        nxt = ref_next_change_at(as_of, want[7], time.time())
        assert repr(row["next_change"]) == repr(nxt), (dict(row), want)
    return len(rows)


@pytest.mark.parametrize("store", FIXTURE_STORES)
def test_audited_fixture_facts_equal_the_reference(stores, tmp_path, store):
    as_of = reference_time(store)
    result = audit(str(stores / store), as_of=as_of, overlay_path=str(tmp_path / "overlay.db"))
    try:
        assert stored_scores_equal_reference(result.store, Config(), as_of) > 0
        for row in result.store.conn.execute("SELECT pk, ref, source_id FROM facts"):
            pk = json.loads(row["pk"])
            assert row["pk"] == ref_pk_json(pk)
        # the same facts rescored later (the daemon's and a re-audit's path): a refresh and
        # confirmations now count
        later = as_of + 45.5 * DAY
        result.store.conn.execute("UPDATE facts SET refreshed_at = ?, confirmations = 2 WHERE id % 3 = 0",
                                  (as_of - 10 * DAY,))
        assert result.engine.rescore(later) > 0
        assert stored_scores_equal_reference(result.store, Config(), later) > 0
    finally:
        result.close()
