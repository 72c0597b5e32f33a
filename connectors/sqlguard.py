"""User SQL goes through sqlglot: one read-only SELECT, quoted identifiers.

This is a lint, not the guarantee: connections are read-only as well (SQLite
`mode=ro` + `query_only`, Postgres READ ONLY transactions).
"""
from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from memwatch_overlay.core.errors import ReadOnlyViolation
from memwatch_overlay.rules.sql_functions import forbidden_calls

_WRITES = (exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Into, exp.Lock, exp.Create,
           exp.Drop, exp.Alter, exp.Command, exp.TruncateTable)


def _first_error(exc: ParseError) -> str:
    if exc.errors:
        e = exc.errors[0]
        return f"{e.get('description', 'syntax error')} (line {e.get('line')}, col {e.get('col')})"
    return str(exc).splitlines()[0]


def _refuse_writes(tree: exp.Expression, what: str, sql: str, dialect: str = "") -> None:
    for node in tree.walk():
        if isinstance(node, _WRITES):
            raise ReadOnlyViolation(f"{what} must be read-only; found {node.key.upper()} in {sql!r}")
    if dialect == "postgres":
        bad = forbidden_calls(tree)
        if bad:
            raise ReadOnlyViolation(f"{what} calls {', '.join(n + '()' for n in bad)}: only pure functions "
                                    "may run in a Postgres source's SQL (see docs/postgres-sources.md)")


def validate_query(sql: str, dialect: str, what: str = "query") -> exp.Query:
    """Parse `sql` and return it if it is exactly one read-only SELECT."""
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except ParseError as exc:
        raise ReadOnlyViolation(f"{what} is not valid SQL: {_first_error(exc)}") from None
    if len(statements) != 1:
        raise ReadOnlyViolation(f"{what} must be exactly one SELECT statement, got {len(statements)}")
    tree = statements[0]
    if not isinstance(tree, exp.Query):
        raise ReadOnlyViolation(f"{what} must be a SELECT, got {tree.key.upper()}: {sql!r}")
    _refuse_writes(tree, what, sql, dialect)
    return tree


def validate_condition(sql: str, dialect: str, what: str = "where") -> exp.Expression:
    """Parse a WHERE condition; refuse statements and writes hidden in subqueries."""
    if ";" in sql:
        # sqlglot would stop at the first statement; a condition never needs one.
        raise ReadOnlyViolation(f"{what} must be a single condition, not statements: {sql!r}")
    try:
        cond = sqlglot.condition(sql, dialect=dialect)
    except ParseError as exc:
        raise ReadOnlyViolation(f"{what} is not a valid SQL condition: {_first_error(exc)}") from None
    _refuse_writes(cond, what, sql, dialect)
    return cond


def column(name: str) -> exp.Column:
    return exp.column(exp.to_identifier(name, quoted=True))


def table(name: str, schema: str | None = None) -> exp.Table:
    return exp.table_(exp.to_identifier(name, quoted=True),
                      db=exp.to_identifier(schema, quoted=True) if schema else None)


def select_rows(source_table: str | None, query: str | None, columns: list[str], dialect: str,
                where: str | None = None, schema: str | None = None,
                extra: list[exp.Expression] = ()) -> exp.Select:
    """SELECT the given columns from a table, or from the user's query as a subquery."""
    if query is not None:
        inner = validate_query(query, dialect)
        frm: exp.Expression = inner.subquery(exp.to_identifier("mw_q", quoted=True))
    else:
        frm = table(source_table, schema)
    stmt = exp.select(*extra, *[column(c) for c in columns]).from_(frm)
    if where:
        stmt = stmt.where(validate_condition(where, dialect))
    return stmt


def sqlglot_rowid() -> exp.Expression:
    """`rowid AS "__mw_rowid__"`: SQLite's implicit key, aliased so it never clashes."""
    return exp.alias_(exp.column("rowid"), exp.to_identifier("__mw_rowid__", quoted=True))
