"""Write-back to Postgres against the real server: exact undo, locks, hostile names and values."""
from __future__ import annotations

import json
import uuid

import pytest

from memwatch_overlay.core.errors import ConfigError
from memwatch_overlay.core.timeparse import parse_as_of
from memwatch_overlay.overlay.writeback.apply import apply_plan
from memwatch_overlay.overlay.writeback.plan import plan_actions
from memwatch_overlay.overlay.writeback.undo import undo_actions
from memwatch_overlay.rules.config import load_config
from wb_support import AS_OF, write_config

pytestmark = pytest.mark.postgres
psycopg = pytest.importorskip("psycopg")
AS_OF_TS = parse_as_of(AS_OF)


def _table(dsn: str, name: str, schema: str = "public") -> None:
    q = f'"{schema}"."{name}"'
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        conn.execute(f"""CREATE TABLE {q} (
            id uuid PRIMARY KEY, fact text NOT NULL, created_at timestamptz, expires_at timestamptz,
            score double precision, hits bigint, amount numeric(12, 4), raw bytea, payload jsonb,
            tags text[], flag boolean, note text, plain_ts timestamp)""")
        for i in range(1, 7):
            conn.execute(
                f"INSERT INTO {q} VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (uuid.UUID(int=i), f"fact {i}",
                 "2001-01-01 00:00:00+00" if i % 2 else "2026-11-28 10:00:00+00",
                 None if i % 3 else "2030-01-01 00:00:00+00", i / 3, 2 ** 40 + i, f"{i}.1234",
                 bytes([i, 0, 255]), json.dumps({"k": i, "nested": {"a": [1, 2.5, None]}}),
                 [f"t{i}", "x y"], bool(i % 2), None if i % 2 else f"note {i}", "2020-02-02 02:02:02.5"))


def _snapshot(dsn: str, name: str, schema: str = "public") -> dict:
    """Every column as (pg_typeof, text), keyed by id."""
    from psycopg import sql
    rel = sql.Identifier(schema, name)
    with psycopg.connect(dsn) as conn:
        cols = [r[0] for r in conn.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped "
            "ORDER BY attnum", (rel.as_string(conn),))]
        parts = sql.SQL(", ").join(sql.SQL("pg_typeof({c})::text, {c}::text").format(c=sql.Identifier(c))
                                    for c in cols)
        out = {}
        for row in conn.execute(sql.SQL("SELECT id::text, {} FROM {}").format(parts, rel)):
            out[row[0]] = {c: (row[1 + 2 * i], row[2 + 2 * i]) for i, c in enumerate(cols)}
        return out


def _config(tmp_path, dsn, table, actions, extra=""):
    return load_config(write_config(tmp_path, f"""
[[sources]]
name = "pg"
connector = "postgres"
dsn = "{dsn}"
table = "{table}"
text = "fact"
created_at = "created_at"
expires_at = "expires_at"
{extra}
{actions}"""))


SET = """
[[actions]]
when = "expired"
do = "set"
set = { expires_at = "now", note = "memwatch: {label}", flag = false, score = "{freshness}", payload = '{{"memwatch": "{label}"}}' }
"""


def test_set_and_undo_restore_every_column_exactly(pg_dsn, tmp_path):
    _table(pg_dsn, "wb_exact")
    original = _snapshot(pg_dsn, "wb_exact")
    cfg = _config(tmp_path, pg_dsn, "wb_exact", SET)
    plan = plan_actions(cfg, AS_OF_TS)
    assert {c.pk["id"][-1] for c in plan.writes} == {"1", "3", "5"}
    assert _snapshot(pg_dsn, "wb_exact") == original          # planning wrote nothing
    result = apply_plan(plan)
    assert len(result.applied) == 3 and not result.skipped
    changed = _snapshot(pg_dsn, "wb_exact")
    for key, row in changed.items():
        if key[-1] in "135":
            assert row["note"] == ("text", "memwatch: expired")
            assert row["flag"] == ("boolean", "false")
            assert json.loads(row["payload"][1]) == {"memwatch": "expired"}
            assert row["expires_at"][0] == "timestamp with time zone" and row["expires_at"][1].startswith("20")
        else:
            assert row == original[key]
    assert plan_actions(cfg, AS_OF_TS).writes == []            # no second write of `now`
    undo_actions(cfg, since=result.run_at)
    assert _snapshot(pg_dsn, "wb_exact") == original


def test_delete_and_undo_reinsert_the_exact_row(pg_dsn, tmp_path):
    _table(pg_dsn, "wb_delete", schema="agent mem")
    original = _snapshot(pg_dsn, "wb_delete", "agent mem")
    cfg = _config(tmp_path, pg_dsn, "agent mem.wb_delete", '\n[[actions]]\nwhen = "expired"\ndo = "delete"\n')
    result = apply_plan(plan_actions(cfg, AS_OF_TS))
    assert len(result.applied) == 3
    assert len(_snapshot(pg_dsn, "wb_delete", "agent mem")) == 3
    undo_actions(cfg, ids=[i for i, _ in result.applied])
    assert _snapshot(pg_dsn, "wb_delete", "agent mem") == original


def test_a_row_locked_by_the_bot_makes_the_batch_wait_then_retry_later(pg_dsn, tmp_path, monkeypatch):
    _table(pg_dsn, "wb_locked")
    original = _snapshot(pg_dsn, "wb_locked")
    cfg = _config(tmp_path, pg_dsn, "wb_locked", SET)
    plan = plan_actions(cfg, AS_OF_TS)
    from memwatch_overlay.connectors import postgres_writer
    monkeypatch.setattr(postgres_writer, "LOCK_TIMEOUT_MS", 200)
    bot = psycopg.connect(pg_dsn)
    try:
        bot.execute("UPDATE wb_locked SET hits = hits + 1 WHERE id = %s", (uuid.UUID(int=3),))  # holds the row lock
        result = apply_plan(plan)
        bot.commit()
    finally:
        bot.close()
    assert not result.applied and len(result.skipped) == 3
    assert all("busy" in s.reason for s in result.skipped)
    now = _snapshot(pg_dsn, "wb_locked")
    assert now[str(uuid.UUID(int=3))]["hits"][1] == str(2 ** 40 + 4)            # the bot's write is there
    assert {k: v for k, v in now.items() if k != str(uuid.UUID(int=3))} == \
        {k: v for k, v in original.items() if k != str(uuid.UUID(int=3))}    # nothing of ours
    retry = apply_plan(plan_actions(cfg, AS_OF_TS))                           # the next tick succeeds
    assert len(retry.applied) == 3


def test_hostile_names_and_values(pg_dsn, tmp_path):
    col = 'note"; DROP TABLE wb_hostile; --'
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute('CREATE TABLE wb_hostile (id int PRIMARY KEY, fact text, created_at timestamptz, '
                     '"note""; DROP TABLE wb_hostile; --" text)')
        conn.execute("INSERT INTO wb_hostile VALUES (1, 'old', '2001-01-01', NULL)")
    value = "'); DROP TABLE wb_hostile; -- %s %(x)s"
    cfg = load_config(write_config(tmp_path, f"""
[[sources]]
name = "pg"
connector = "postgres"
dsn = "{pg_dsn}"
table = "wb_hostile"
text = "fact"
created_at = "created_at"

[[actions]]
when = "expired"
do = "set"
set = {{ {json.dumps(col)} = {json.dumps(value)} }}
"""))
    result = apply_plan(plan_actions(cfg, AS_OF_TS))
    assert len(result.applied) == 1
    assert _snapshot(pg_dsn, "wb_hostile")["1"][col] == ("text", value)
    bad = load_config(write_config(tmp_path, cfg.path.read_text().replace(json.dumps(col), '"x; DROP TABLE wb_hostile"'),
                                   "bad.toml"))
    with pytest.raises(ConfigError, match=r"actions\[0\]\.set\.x; DROP TABLE wb_hostile: no column"):
        plan_actions(bad, AS_OF_TS)
    with psycopg.connect(pg_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM wb_hostile").fetchone()[0] == 1


@pytest.fixture
def lg_pg_dsn(pg_database):
    """A throwaway database for LangGraph's PostgresStore tables."""
    return pg_database("memwatch_wb_lg")


def test_langgraph_postgres_store_expire_sweep_undo(lg_pg_dsn, tmp_path):
    """LangGraph's own PostgresStore writes the items, expires nothing by itself, then its
    sweep_ttl() deletes exactly what write-back expired; undo puts the rows back exactly."""
    PostgresStore = pytest.importorskip(
        "langgraph.store.postgres", reason="pip install 'memwatch-overlay[test-integrations]'").PostgresStore
    ns = ("users", "u_priya", "memories")
    with PostgresStore.from_conn_string(lg_pg_dsn) as store:
        store.setup()
        store.put(ns, "emp.old", {"memory": "Priya works at Google as a product analyst."})
        store.put(ns, "emp.new", {"memory": "Priya just joined Stripe as a staff engineer."})
    with psycopg.connect(lg_pg_dsn, autocommit=True) as conn:
        conn.execute("UPDATE store SET created_at = '2001-01-01', updated_at = '2001-01-01' WHERE key = 'emp.old'")
    from psycopg import sql

    def rows():
        with psycopg.connect(lg_pg_dsn) as conn:
            cols = [r[0] for r in conn.execute("SELECT column_name FROM information_schema.columns "
                                               "WHERE table_name = 'store' ORDER BY ordinal_position")]
            parts = sql.SQL(", ").join(sql.SQL("pg_typeof({c})::text, {c}::text").format(c=sql.Identifier(c))
                                        for c in cols)
            return {r[0]: r[1:] for r in conn.execute(sql.SQL("SELECT key, {} FROM store").format(parts))}

    original = rows()
    cfg = load_config(write_config(tmp_path, f"""
[[sources]]
name = "lg"
connector = "postgres"
dsn = "{lg_pg_dsn}"
preset = "langgraph-postgres"

[[actions]]
when = "expired"
do = "expire"
"""))
    result = apply_plan(plan_actions(cfg, AS_OF_TS))
    assert [c.pk["key"] for _, c in result.applied] == ["emp.old"]
    with PostgresStore.from_conn_string(lg_pg_dsn) as store:
        assert store.get(ns, "emp.old") is not None          # still there until LangGraph sweeps
        assert store.sweep_ttl() == 1
        assert store.get(ns, "emp.old") is None
        assert store.get(ns, "emp.new") is not None
    undone = undo_actions(cfg, since=result.run_at)
    assert [note for _, note in undone.restored] == ["re-inserted (the store's sweeper had removed the expired row)"]
    assert rows() == original
    with PostgresStore.from_conn_string(lg_pg_dsn) as store:
        assert store.get(ns, "emp.old").value == {"memory": "Priya works at Google as a product analyst."}
