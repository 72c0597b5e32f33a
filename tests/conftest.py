"""Shared fixtures: fixture-store paths, a throwaway Postgres database, CI skip policy.

Under CI=true a skipped Postgres, embeddings, browser, MCP, LangGraph, framework-store, RE2, training (scikit-learn) or
root (tmpfs mount) test is a failure: CI must never pass by not running the tests that need real services or extras.
"""
from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
AGENT_STORES = FIXTURES / "agent-stores"
STRICT_MARKERS = ("postgres", "embeddings", "browser", "mcp", "langgraph", "re2", "numpy", "integrations", "root",
                  "train")
DEFAULT_PG_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and in_ci() and any(item.get_closest_marker(m) for m in STRICT_MARKERS):
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true, which counts as a failure: {report.longrepr}"


@pytest.hookimpl(tryfirst=True)
def pytest_collectreport(report):
    """A whole module skipped at import (a module-level importorskip of an extra) is a
    failure under CI=true too: the per-test hook above never sees those tests."""
    if report.skipped and in_ci():
        report.outcome = "failed"
        report.longrepr = f"module skipped under CI=true, which counts as a failure: {report.longrepr}"


@pytest.fixture
def agent_store(tmp_path):
    """Copy a fixture store folder into tmp_path and return the copy's folder."""
    def copy(framework: str) -> Path:
        dest = tmp_path / framework
        shutil.copytree(AGENT_STORES / framework, dest)
        for p in dest.rglob("*"):
            p.chmod(p.stat().st_mode | 0o200)
        return dest
    return copy


def load_manifest(framework: str) -> dict:
    return json.loads((AGENT_STORES / framework / "manifest.json").read_text())


def pg_url(params: dict, dbname: str) -> str:
    """A postgresql:// URL (the form TARGET detection recognises) for `dbname`."""
    from urllib.parse import quote
    auth = quote(params.get("user", "postgres"))
    if params.get("password"):
        auth += ":" + quote(params["password"])
    host = params.get("host", "127.0.0.1")
    return f"postgresql://{auth}@{host}:{params.get('port', 5432)}/{dbname}"


@pytest.fixture(scope="session")
def pg_server_dsn():
    """DSN of a server database we may CREATE DATABASE from (MEMWATCH_TEST_PG_DSN or local)."""
    psycopg = pytest.importorskip("psycopg", reason="psycopg (the [postgres] extra) is not installed")
    dsn = os.environ.get("MEMWATCH_TEST_PG_DSN", DEFAULT_PG_DSN)
    try:
        psycopg.connect(dsn, connect_timeout=3, autocommit=True).close()
    except psycopg.Error as exc:
        pytest.skip(f"PostgreSQL not reachable: {exc}")
    return dsn


class PgDatabases:
    """Throwaway databases on the test server: make(prefix) creates one and returns its
    postgresql:// URL; drop_all() drops every one made (WITH (FORCE): sessions left open
    by a failed test do not keep them)."""

    def __init__(self, server_dsn: str):
        from psycopg import conninfo
        self.server_dsn = server_dsn
        self.params = conninfo.conninfo_to_dict(server_dsn)
        self.made: list[str] = []

    def _run(self, statement) -> None:
        import psycopg
        with psycopg.connect(self.server_dsn, autocommit=True) as conn:
            conn.execute(statement)

    def make(self, prefix: str = "memwatch_test") -> str:
        from psycopg import sql
        name = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
        self._run(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        self.made.append(name)
        return pg_url(self.params, name)

    def drop_all(self) -> None:
        from psycopg import sql
        while self.made:
            self._run(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(self.made.pop())))


@pytest.fixture(scope="session")
def pg_dsn(pg_server_dsn):
    """A throwaway database for this test session, dropped at the end."""
    dbs = PgDatabases(pg_server_dsn)
    yield dbs.make()
    dbs.drop_all()


@pytest.fixture
def pg_database(pg_server_dsn):
    """Factory of throwaway databases for one test: pg_database(prefix) -> URL; all dropped after it."""
    dbs = PgDatabases(pg_server_dsn)
    yield dbs.make
    dbs.drop_all()
