"""Accepted and refused user SQL (the lint; connections are read-only as well)."""
import pytest

from memwatch_overlay.connectors import sqlguard
from memwatch_overlay.core.errors import ReadOnlyViolation


@pytest.mark.parametrize("sql", [
    "SELECT id, fact FROM facts",
    "SELECT f.id, f.fact FROM facts f JOIN users u ON u.id = f.user_id WHERE u.active = 1",
    "WITH recent AS (SELECT * FROM facts WHERE created_at > '2025-01-01') SELECT * FROM recent",
    "SELECT id FROM a UNION SELECT id FROM b",
])
def test_accepts_one_select(sql):
    sqlguard.validate_query(sql, "sqlite")


@pytest.mark.parametrize("sql,why", [
    ("UPDATE facts SET fact = 'x'", "SELECT"),
    ("DELETE FROM facts", "SELECT"),
    ("SELECT 1; DELETE FROM facts", "exactly one"),
    ("SELECT 1; SELECT 2", "exactly one"),
    ("DROP TABLE facts", "SELECT"),
    ("WITH x AS (DELETE FROM facts RETURNING *) SELECT * FROM x", "read-only"),
    ("SELECT * INTO copy FROM facts", "read-only"),
    ("INSERT INTO facts VALUES (1)", "SELECT"),
    ("SELEC id FRM facts", "valid SQL|SELECT"),
])
def test_refuses_everything_else(sql, why):
    with pytest.raises(ReadOnlyViolation, match=why):
        sqlguard.validate_query(sql, "postgres")


@pytest.mark.parametrize("cond", ["is_deleted = 0; DROP TABLE facts", "1 = 1) OR (1 = 1; --",
                                  "id IN (SELECT id FROM x FOR UPDATE)"])
def test_where_conditions_cannot_smuggle_statements(cond):
    with pytest.raises(ReadOnlyViolation):
        sqlguard.validate_condition(cond, "postgres")


def test_identifiers_are_quoted():
    sql = sqlguard.select_rows('my"table', None, ["fact value", "id"], "sqlite").sql(dialect="sqlite")
    assert sql == 'SELECT "fact value", "id" FROM "my""table"'
