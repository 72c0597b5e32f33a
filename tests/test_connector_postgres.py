"""Postgres connector and presets against the real server (MEMWATCH_TEST_PG_DSN or 127.0.0.1:5432).

Stores are written by the framework's own code where it can run without an LLM
(LangGraph's PostgresStore); mem0's pgvector table is created with mem0's layout
(the server has no pgvector extension, so `vector` is a real[] stand-in: the preset
never reads it).
"""
import json
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from conftest import PgDatabases, pg_url

from memwatch_overlay.connectors.recognize import detect
from memwatch_overlay.connectors.registry import make_connector
from memwatch_overlay.core.errors import ConnectorError
from memwatch_overlay.core.timeparse import parse_timestamp
from memwatch_overlay.rules.config import SourceConfig

pytestmark = pytest.mark.postgres

EXE = Path(sys.executable).with_name("memwatch-overlay")
AS_OF = "2026-11-29"
SECRET = "Hunter2-sekrit-pw"
OLD = "2025-06-07 13:39:41+00"


def run(*args, env=None, cwd=None):
    return subprocess.run([str(EXE), *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "COLUMNS": "120", **(env or {})}, timeout=120)


def with_password(dsn: str, password: str = SECRET) -> str:
    """The same DSN with a password (the server trusts 127.0.0.1, so it is ignored)."""
    head, rest = dsn.split("://", 1)
    user, host = rest.split("@", 1)
    return f"{head}://{user.split(':')[0]}:{password}@{host}"


def assert_clean_failure(proc, *needles):
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    first = proc.stderr.splitlines()[0]
    assert first.startswith("Error: ")
    for needle in needles:
        assert needle in first, first
    assert SECRET not in proc.stderr + proc.stdout


@pytest.fixture(scope="module")
def new_db(pg_server_dsn):
    """Factory of throwaway databases (new_db(tag) -> URL) for this module, all dropped at its end."""
    dbs = PgDatabases(pg_server_dsn)
    yield lambda tag: dbs.make(f"memwatch_test_{tag}")
    dbs.drop_all()


def admin(dsn, *statements):
    import psycopg
    with psycopg.connect(dsn, autocommit=True) as conn:
        for st in statements:
            if isinstance(st, tuple):
                conn.execute(*st)
            else:
                conn.execute(st)


def langgraph_store(dsn, items):
    """Create LangGraph's tables with its own setup() and put() the items."""
    PostgresStore = pytest.importorskip(
        "langgraph.store.postgres", reason="pip install 'memwatch-overlay[test-integrations]'").PostgresStore
    with PostgresStore.from_conn_string(dsn) as store:
        store.setup()
        for namespace, key, value, ttl in items:
            store.put(namespace, key, value, ttl=ttl)


LG_ITEMS = [
    (("users", "u_priya", "memories"), "emp.old", {"memory": "Priya works at Google as a product analyst."}, None),
    (("users", "u_priya", "memories"), "emp.new", {"memory": "Priya just joined Stripe as a staff engineer."}, 1440),
    (("users", "u_tomasz", "memories"), "veg", {"content": {"content": "Tomasz is vegetarian."}}, None),
]


@pytest.fixture(scope="module")
def langgraph_db(new_db):
    dsn = new_db("langgraph")
    langgraph_store(dsn, LG_ITEMS)
    admin(dsn, f"UPDATE store SET created_at = '{OLD}', updated_at = '{OLD}' WHERE key = 'emp.old'")
    return dsn


MEM0_ROWS = [
    ("5c5b8a3e-0000-4000-8000-000000000001",
     {"data": "Lives in Jakarta", "hash": "h1", "user_id": "alice", "created_at": "2025-01-05T09:00:00-08:00"}),
    ("5c5b8a3e-0000-4000-8000-000000000002",
     {"data": "Moved to Surabaya", "hash": "h2", "user_id": "alice", "created_at": "2025-01-05T09:00:00-08:00",
      "updated_at": "2026-11-01T09:00:00-07:00"}),
    ("5c5b8a3e-0000-4000-8000-000000000003",
     {"data": "Prefers short answers", "hash": "h3", "agent_id": "support-bot",
      "created_at": "2026-11-20T10:00:00-08:00", "category": "preferences"}),
]


def mem0_table(dsn, rows=MEM0_ROWS, schema="agent"):
    from psycopg.types.json import Jsonb
    admin(dsn, f"CREATE SCHEMA IF NOT EXISTS {schema}",
          f"CREATE TABLE IF NOT EXISTS {schema}.mem0 (id UUID PRIMARY KEY, vector real[], payload JSONB)",
          *[(f"INSERT INTO {schema}.mem0 (id, vector, payload) VALUES (%s, %s, %s)", (i, [0.1, 0.2], Jsonb(p)))
            for i, p in rows])


@pytest.fixture(scope="module")
def mem0_db(new_db):
    dsn = new_db("mem0")
    mem0_table(dsn)
    return dsn


# -- zero-config audits and init ----------------------------------------------------------

def test_zero_config_audit_langgraph_postgres(langgraph_db, tmp_path):
    target = with_password(langgraph_db)
    proc = run("audit", target, "--format", "json", "--as-of", AS_OF, "--overlay", tmp_path / "o.db")
    assert proc.returncode == 0, proc.stderr
    assert SECRET not in proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    src = report["sources"][0]
    assert src["connector"] == "postgres" and src["preset"] == "langgraph-postgres"
    assert src["target"] == with_password(langgraph_db, "***")
    db = src["name"]
    assert db == "langgraph-postgres"           # zero-config sources are named after their preset
    facts = {f["ref"]: f for f in report["facts"]}
    assert set(facts) == {f"{db}:store:users.{ns[1]}.memories:{key}" for ns, key, _, _ in LG_ITEMS}
    old = facts[f"{db}:store:users.u_priya.memories:emp.old"]
    assert old["pk"] == {"prefix": "users.u_priya.memories", "key": "emp.old"}
    assert old["subject"] == "u_priya" and old["text"] == "Priya works at Google as a product analyst."
    assert old["category"] == "employment" and old["created_at"] == "2025-06-07T13:39:41+00:00"
    assert old["label"] == "expired"          # 540 days at employment's 180-day half-life
    new = facts[f"{db}:store:users.u_priya.memories:emp.new"]
    assert new["expires_at"] is not None      # LangGraph's own TTL column, read as the source's expiry
    assert facts[f"{db}:store:users.u_tomasz.memories:veg"]["text"] == "Tomasz is vegetarian."
    assert report["summary"]["total"] == len(LG_ITEMS)
    for key in ("version", "as_of", "passed", "summary", "thresholds", "facts", "contradictions"):
        assert key in report


def _summary_and_labels(proc):
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    return report["summary"], sorted((f["ref"], f["label"], f["category"]) for f in report["facts"])


def test_init_reproduces_zero_config_audit_postgres(langgraph_db, tmp_path):
    target = with_password(langgraph_db)
    cfg = tmp_path / "memwatch.toml"
    proc = run("init", target, "--output", cfg)
    assert proc.returncode == 0, proc.stderr
    text = cfg.read_text()
    assert SECRET not in text + proc.stdout + proc.stderr
    assert 'preset = "langgraph-postgres"' in text and "PGPASSWORD" in text
    zero = run("audit", target, "--format", "json", "--as-of", AS_OF, "--overlay", tmp_path / "a.db")
    again = run("audit", "--config", cfg, "--format", "json", "--as-of", AS_OF, "--overlay", tmp_path / "b.db")
    assert _summary_and_labels(zero) == _summary_and_labels(again)


def test_zero_config_mem0_pgvector_schema_qualified(mem0_db, tmp_path):
    det = detect(mem0_db)
    assert det.matches[0].preset == "mem0-pgvector"
    assert det.matches[0].defaults["table"] == "agent.mem0"
    assert any(t.name == "agent.mem0" and t.pk == ["id"] for t in det.tables)
    proc = run("audit", mem0_db, "--format", "json", "--as-of", AS_OF, "--overlay", tmp_path / "o.db")
    assert proc.returncode == 0, proc.stderr
    facts = {f["pk"]["id"]: f for f in json.loads(proc.stdout)["facts"]}
    assert set(facts) == {i for i, _ in MEM0_ROWS}
    moved = facts[MEM0_ROWS[1][0]]
    assert moved["table"] == "agent.mem0" and moved["text"] == "Moved to Surabaya"
    assert moved["subject"] == "alice"
    assert moved["created_at"] == "2025-01-05T17:00:00+00:00"     # -08:00 read as such
    assert moved["updated_at"] == "2026-11-01T16:00:00+00:00"
    assert facts[MEM0_ROWS[2][0]]["subject"] == "support-bot"      # agent_id when no user_id


# -- the connection: read-only, server-side cursor, watermark ---------------------------------

def lg_source(dsn, **kw):
    return SourceConfig(name="lg", connector="postgres", dsn=dsn, preset="langgraph-postgres", **kw)


def test_session_is_read_only_and_rows_stream_from_a_named_cursor(langgraph_db):
    import psycopg
    with make_connector(lg_source(langgraph_db)) as conn:
        rows = conn.read(None)
        next(rows)                                  # mid-stream: the server holds our cursor
        pg = conn.conn
        cursors = [r[0] for r in pg.execute("SELECT name FROM pg_cursors").fetchall()]
        assert any(name.startswith("memwatch_") for name in cursors), cursors
        assert pg.execute("SHOW transaction_read_only").fetchone()[0] == "on"
        assert pg.execute("SHOW default_transaction_read_only").fetchone()[0] == "on"
        assert pg.execute("SHOW TimeZone").fetchone()[0] == "UTC"
        rest = list(rows)
        assert len(rest) == len(LG_ITEMS) - 1 and conn.rows_read == len(LG_ITEMS)
        # the read transaction ended when the read did
        assert pg.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            pg.execute("DELETE FROM store")
        pg.rollback()
    admin(langgraph_db, "SELECT 1")
    with psycopg.connect(langgraph_db) as check:
        assert check.execute("SELECT count(*) FROM store").fetchone()[0] == len(LG_ITEMS)


def test_a_dropped_session_is_reopened_on_the_next_read(langgraph_db):
    import psycopg
    with make_connector(lg_source(langgraph_db)) as conn:
        assert len(list(conn.read(None))) == len(LG_ITEMS)
        pid = conn.conn.info.backend_pid
        with psycopg.connect(langgraph_db, autocommit=True) as other:     # e.g. a server restart
            other.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(ConnectorError, match="read failed|cannot read table"):
            list(conn.read(None))
        assert len(list(conn.read(None))) == len(LG_ITEMS)           # the next read reconnects
        assert conn.conn.info.backend_pid != pid


def test_watermark_reads_only_what_changed(new_db):
    dsn = new_db("lgincr")
    langgraph_store(dsn, [(("users", f"u{i}", "memories"), f"k{i}", {"memory": f"fact {i}"}, None)
                          for i in range(50)])
    admin(dsn, f"UPDATE store SET created_at = '{OLD}', updated_at = '{OLD}'")
    src = lg_source(dsn)
    with make_connector(src) as conn:
        assert len(list(conn.read(None))) == 50 and conn.read_all is True
        cursor = conn.cursor
    assert cursor["watermark"] == parse_timestamp(OLD) - 60
    langgraph_store(dsn, [(("users", "u7", "memories"), "k7", {"memory": "fact 7, changed"}, None),
                          (("users", "u99", "memories"), "k99", {"memory": "a new fact"}, None)])
    with make_connector(src) as conn:
        changed = list(conn.read(cursor))
        assert conn.read_all is False
        # the 50 old rows sit within the overlap of the old watermark only; they are re-read
        # once, after which the watermark moves past them
        assert {r.text for r in changed} >= {"fact 7, changed", "a new fact"}
        cursor = conn.cursor
    with make_connector(src) as conn:
        again = list(conn.read(cursor))
        assert {r.text for r in again} == {"fact 7, changed", "a new fact"}   # only the overlap
        assert conn.rows_read == 2


def test_jsonb_timestamp_watermark_and_fallback(new_db):
    dsn = new_db("mem0incr")
    mem0_table(dsn)
    src = SourceConfig(name="m", connector="postgres", dsn=dsn, preset="mem0-pgvector", table="agent.mem0")
    with make_connector(src) as conn:
        assert len(list(conn.read(None))) == 3
        cursor = conn.cursor
    assert cursor["watermark"] == parse_timestamp("2026-11-20T18:00:00Z") - 60
    # a row written later is picked up; of the old ones only the newest (inside the overlap)
    mem0_table(dsn, [("5c5b8a3e-0000-4000-8000-000000000004",
                      {"data": "Switched to tea", "user_id": "bob", "created_at": "2026-11-28T08:00:00+00:00"})])
    with make_connector(src) as conn:
        assert sorted(r.text for r in conn.read(cursor)) == ["Prefers short answers", "Switched to tea"]
        assert conn.rows_read == 2 and conn.read_all is False
        cursor2 = conn.cursor
    # a value the cast cannot read: a warning, then everything is read
    mem0_table(dsn, [("5c5b8a3e-0000-4000-8000-000000000005",
                      {"data": "Bad clock", "user_id": "bob", "created_at": "yesterday-ish"})])
    with make_connector(src) as conn:
        recs = list(conn.read(cursor2))
        assert conn.read_all is True and len(recs) == 5
        assert any("incremental read failed" in w for w in conn.warnings)
        assert any("'yesterday-ish' is not a timestamp" in w for w in conn.warnings)


def test_query_and_where_in_the_postgres_dialect(langgraph_db, tmp_path):
    cfg = tmp_path / "memwatch.toml"
    cfg.write_text(
        "[[sources]]\nname = \"q\"\nconnector = \"postgres\"\n"
        "dsn_env = \"MW_TEST_DSN\"\n"
        "query = \"SELECT prefix || '/' || key AS id, value ->> 'memory' AS memory, updated_at "
        "FROM store WHERE value ? 'memory'\"\n"
        "id = \"id\"\ntext = \"memory\"\ncreated_at = \"updated_at\"\n"
        "where = \"id LIKE 'users.u_priya%'\"\n")
    proc = run("audit", "--config", cfg, "--format", "json", "--as-of", AS_OF, "--overlay", tmp_path / "o.db",
               env={"MW_TEST_DSN": with_password(langgraph_db)})
    assert proc.returncode == 0, proc.stderr
    facts = json.loads(proc.stdout)["facts"]
    assert sorted(f["pk"]["id"] for f in facts) == ["users.u_priya.memories/emp.new",
                                                     "users.u_priya.memories/emp.old"]
    assert SECRET not in proc.stdout + proc.stderr


@pytest.mark.parametrize("where, needle", [
    ("key IN (SELECT key FROM store FOR UPDATE)", "must be read-only"),
    ("1 = 1; DROP TABLE store", "not statements"),
])
def test_writing_sql_is_refused(langgraph_db, tmp_path, where, needle):
    cfg = tmp_path / "memwatch.toml"
    cfg.write_text(f"[[sources]]\nname = \"q\"\nconnector = \"postgres\"\ndsn = \"{langgraph_db}\"\n"
                   f"preset = \"langgraph-postgres\"\nwhere = {json.dumps(where)}\n")
    assert_clean_failure(run("audit", "--config", cfg, "--overlay", tmp_path / "o.db"), needle)


# -- bad input ---------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_dsn(tmp_path):
    dsn = f"postgresql://postgres:{SECRET}@127.0.0.1:{free_port()}/memwatch"
    proc = run("audit", dsn, "--overlay", tmp_path / "o.db")
    assert_clean_failure(proc, "postgresql://postgres:***@127.0.0.1:", "cannot connect", "Connection refused")
    assert_clean_failure(run("sources", "detect", dsn), "cannot connect")
    assert_clean_failure(run("init", dsn, "--output", tmp_path / "m.toml"), "cannot connect")
    assert not (tmp_path / "m.toml").exists()


def test_unreachable_dsn_from_env_and_key_value_form(tmp_path):
    port = free_port()
    cfg = tmp_path / "memwatch.toml"
    cfg.write_text('[[sources]]\nname = "bot"\nconnector = "postgres"\ndsn_env = "MW_TEST_DSN"\n'
                   'table = "store"\nid = "key"\ntext = "value"\n')
    kv = f"host=127.0.0.1 port={port} user=postgres password={SECRET} dbname=memwatch"
    proc = run("audit", "--config", cfg, "--overlay", tmp_path / "o.db", env={"MW_TEST_DSN": kv})
    assert_clean_failure(proc, "password=***", "cannot connect")
    env = {k: v for k, v in os.environ.items() if k != "MW_TEST_DSN"}
    proc = subprocess.run([str(EXE), "audit", "--config", str(cfg), "--overlay", str(tmp_path / "o.db")],
                          capture_output=True, text=True, env=env, timeout=60)
    assert_clean_failure(proc, "MW_TEST_DSN", "is not set")


def test_missing_database_and_role(pg_server_dsn, tmp_path):
    from psycopg import conninfo
    params = conninfo.conninfo_to_dict(pg_server_dsn)
    missing_db = with_password(pg_url(params, f"memwatch_missing_{uuid.uuid4().hex[:8]}"))
    assert_clean_failure(run("audit", missing_db, "--overlay", tmp_path / "o.db"), "does not exist")
    ghost = pg_url({**params, "user": f"memwatch_ghost_{uuid.uuid4().hex[:8]}", "password": SECRET},
                   params.get("dbname", "postgres"))
    assert_clean_failure(run("audit", ghost, "--overlay", tmp_path / "o.db"), "role", "does not exist")


def test_role_rejected_at_login(pg_server_dsn, tmp_path):
    """The server trusts 127.0.0.1, so a wrong password cannot be tested here; a role that
    has a password but may not log in is refused by the server at authentication."""
    from psycopg import conninfo, sql
    params = conninfo.conninfo_to_dict(pg_server_dsn)
    role = f"memwatch_nologin_{os.getpid()}"
    admin(pg_server_dsn, sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)),
          sql.SQL("CREATE ROLE {} NOLOGIN PASSWORD {}").format(sql.Identifier(role), sql.Literal(SECRET)))
    try:
        dsn = pg_url({**params, "user": role, "password": SECRET}, params.get("dbname", "postgres"))
        proc = run("audit", dsn, "--overlay", tmp_path / "o.db")
        assert_clean_failure(proc, "cannot connect", "not permitted to log in")
    finally:
        admin(pg_server_dsn, sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def test_missing_table_and_column(langgraph_db, tmp_path):
    cfg = tmp_path / "memwatch.toml"
    base = f"[[sources]]\nname = \"bot\"\nconnector = \"postgres\"\ndsn = \"{with_password(langgraph_db)}\"\n"
    cfg.write_text(base + 'table = "agent_facts"\nid = "id"\ntext = "fact"\n')
    assert_clean_failure(run("audit", "--config", cfg, "--overlay", tmp_path / "o.db"),
                         "no table 'agent_facts'", "store")
    cfg.write_text(base + 'table = "store"\nid = ["prefix", "key"]\ntext = "memory"\n')
    assert_clean_failure(run("audit", "--config", cfg, "--overlay", tmp_path / "o.db"),
                         "text = 'memory'", "no column 'memory'")
    cfg.write_text(base + 'table = "store"\nid = "uuid"\ntext = "value.memory"\n')
    assert_clean_failure(run("audit", "--config", cfg, "--overlay", tmp_path / "o.db"), "id = 'uuid'")
    cfg.write_text(base + 'query = "SELECT nope FROM store"\nid = "nope"\ntext = "nope"\n')
    assert_clean_failure(run("audit", "--config", cfg, "--overlay", tmp_path / "o.db"),
                         "query failed", 'column "nope" does not exist')


def test_connector_error_messages_never_hold_the_password(langgraph_db):
    src = SourceConfig(name="bot", connector="postgres", dsn=with_password(langgraph_db), table="nope",
                       id=["id"], text="t")
    with pytest.raises(ConnectorError) as err:
        with make_connector(src) as conn:
            list(conn.read(None))
    assert SECRET not in str(err.value) and "no table 'nope'" in str(err.value)


def test_sources_detect_lists_every_match(new_db):
    dsn = new_db("both")
    langgraph_store(dsn, LG_ITEMS[:1])
    mem0_table(dsn, MEM0_ROWS[:1], schema="public")
    proc = run("sources", "detect", with_password(dsn), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert SECRET not in proc.stdout
    ranked = [m["preset"] for m in data["matches"]]
    assert set(ranked[:2]) == {"langgraph-postgres", "mem0-pgvector"}
    assert ranked[2:] == ["generic-postgres"]          # the heuristics rank below real presets
    tables = {t["name"] for t in data["tables"]}
    assert {"store", "mem0"} <= tables
    text = run("sources", "detect", dsn)
    assert "langgraph-postgres" in text.stdout and "mem0-pgvector" in text.stdout


def test_home_made_table_zero_config_and_init(new_db, tmp_path):
    dsn = new_db("homemade")
    admin(dsn, "CREATE SCHEMA bot",
          "CREATE TABLE bot.agent_facts (id bigint PRIMARY KEY, user_id text, fact_value text, "
          "created_at timestamp)",
          "CREATE TABLE bot.no_key (fact_value text, created_at timestamp)",
          "INSERT INTO bot.agent_facts VALUES (1, 'u1', 'Works at Google', '2025-06-07 10:00'), "
          "(2, 'u1', 'Joined Stripe', '2026-11-20 10:00')")
    det = detect(dsn)
    assert [m.preset for m in det.matches] == ["generic-postgres"]
    assert det.matches[0].defaults["table"] == "bot.agent_facts"
    zero = run("audit", dsn, "--format", "json", "--as-of", AS_OF, "--overlay", tmp_path / "a.db")
    cfg = tmp_path / "memwatch.toml"
    assert run("init", dsn, "--output", cfg).returncode == 0
    assert 'table = "bot.agent_facts"' in cfg.read_text() and "preset =" not in cfg.read_text()
    again = run("audit", "--config", cfg, "--format", "json", "--as-of", AS_OF, "--overlay", tmp_path / "b.db")
    assert _summary_and_labels(zero) == _summary_and_labels(again)
    facts = {f["pk"]["id"]: f for f in json.loads(zero.stdout)["facts"]}
    assert facts["1"]["created_at"] == "2025-06-07T10:00:00+00:00"   # timestamp without zone = UTC
    assert facts["1"]["category"] == "employment" and facts["1"]["subject"] == "u1"


# -- the deletion pass: keys only, lookups by key --------------------------------------------

def _home_made(dsn, n):
    admin(dsn, "CREATE TABLE facts (id bigint PRIMARY KEY, owner text, fact text, created_at timestamptz, "
               "updated_at timestamptz)",
          (f"INSERT INTO facts SELECT i, 'u' || mod(i, 7), 'fact number ' || i, '{OLD}', '{OLD}' "
           "FROM generate_series(1, %s) AS i", (n,)))
    return SourceConfig(name="pgfacts", connector="postgres", dsn=dsn, table="facts", id=["id"], text="fact",
                        subject="owner", created_at="created_at", updated_at="updated_at",
                        where="fact NOT LIKE 'hidden%'")


def test_keys_and_fetch_match_a_full_read(new_db):
    """keys() reads the key columns alone (not counted as rows); fetch() finds records by
    key, composite keys included, and both honour the source's `where`."""
    dsn = new_db("pgkeys")
    src = _home_made(dsn, 1200)
    admin(dsn, "UPDATE facts SET fact = 'hidden ' || id WHERE id % 100 = 0")
    with make_connector(src) as conn:
        full = {r.ref: r for r in conn.read(None)}
        rows = conn.rows_read
        keys = list(conn.keys())
        assert conn.rows_read == rows and conn.keys_read == len(keys) == len(full) == 1188
        assert sorted(k["id"] for k in keys) == sorted(r.pk["id"] for r in full.values())
        wanted = [{"id": "7"}, {"id": "1199"}, {"id": "100"}, {"id": "99999"}]   # hidden, absent
        got = list(conn.fetch(iter(wanted * 300)))                              # several batches
        assert sorted(r.pk["id"] for r in got) == ["1199", "7"]
        assert all(r == full[r.ref] for r in got)
    lg = new_db("pgkeyslg")
    langgraph_store(lg, LG_ITEMS)
    with make_connector(lg_source(lg)) as conn:
        full = {r.ref: r for r in conn.read(None)}
        keys = list(conn.keys())
        assert sorted(map(json.dumps, keys)) == sorted(json.dumps(r.pk) for r in full.values())
        assert len(keys[0]) == 2                                                 # (prefix, key)
        assert [r.ref for r in conn.fetch([keys[1]])] == [make_ref_of(keys[1], full)]


def make_ref_of(pk, records):
    return next(ref for ref, r in records.items() if r.pk == pk)


def test_deletion_pass_on_postgres_reads_keys_and_fetches_what_it_lacks(new_db, tmp_path):
    from memwatch_overlay.overlay.store.database import OverlayStore
    from memwatch_overlay.overlay.engine.sync import SyncEngine
    from memwatch_overlay.rules.config import Config

    dsn = new_db("pgdelpass")
    src = _home_made(dsn, 3000)
    with OverlayStore(tmp_path / "overlay.db") as overlay, make_connector(src) as conn:
        engine = SyncEngine(overlay, Config())
        engine.sync(src, full=True, connector=conn)
        # deleted rows, and a row the watermark cannot see (backfilled with an older timestamp)
        admin(dsn, "DELETE FROM facts WHERE id IN (5, 6, 2999)",
              "INSERT INTO facts VALUES (5000, 'u1', 'backfilled fact', '2020-01-01', '2020-01-01')")
        engine.sync(src, full=False, connector=conn)
        assert overlay.fact_id("pgfacts:facts:5000") is None
        rows_before = conn.rows_read
        stats = engine.sync_deletions(src, connector=conn)
        assert stats.keys_read == 2998 and stats.deleted == 3 and stats.missing == 1
        assert conn.rows_read - rows_before == 1, "only the missing row is read whole"
        status = dict(overlay.conn.execute("SELECT ref, status FROM facts").fetchall())
        assert {r for r, s in status.items() if s == "deleted"} == {"pgfacts:facts:5", "pgfacts:facts:6",
                                                                    "pgfacts:facts:2999"}
        assert status["pgfacts:facts:5000"] == "active"
        assert engine.sync_deletions(src, connector=conn).deleted == 0
