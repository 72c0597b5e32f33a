"""Which function calls a Postgres source's `where` / `query` may make: pure ones only.

A READ ONLY transaction does not stop a function that opens a second connection
(`dblink_exec(...)`, `postgres_fdw`) or has effects outside the transaction
(`pg_sleep`, `set_config`, `nextval`, `lo_export`, `query_to_xml('DELETE ...')`). So user
SQL for a Postgres source may call only:

- the functions sqlglot itself recognises (standard SQL: `lower`, `coalesce`, `length`,
  `cast`, `extract`, `now()`/`current_timestamp`, the JSON operators `->`/`->>`...), which it
  parses into typed nodes; and
- the Postgres functions named in PURE_FUNCTIONS below (text, JSON, date and math helpers
  with no side effects).

Any other call (sqlglot leaves it as an anonymous function) is refused when memwatch.toml
is loaded, naming the key; docs/postgres-sources.md says why and what to do instead.
"""
from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

PURE_FUNCTIONS = frozenset({
    # text
    "btrim", "ltrim", "rtrim", "lpad", "rpad", "split_part", "strpos", "position", "replace",
    "translate", "initcap", "left", "right", "reverse", "repeat", "concat_ws", "starts_with",
    "char_length", "character_length", "octet_length", "bit_length", "md5", "ascii", "chr",
    "regexp_replace", "regexp_match", "regexp_matches", "regexp_like", "regexp_substr",
    "regexp_count", "regexp_instr", "to_char", "to_number", "format", "quote_ident", "quote_literal",
    # json / jsonb
    "json_extract_path", "json_extract_path_text", "jsonb_extract_path", "jsonb_extract_path_text",
    "json_typeof", "jsonb_typeof", "json_array_length", "jsonb_array_length", "jsonb_exists",
    "jsonb_path_exists", "jsonb_path_match", "jsonb_path_query_first", "to_json", "to_jsonb",
    "jsonb_strip_nulls", "json_strip_nulls", "jsonb_build_object", "json_build_object",
    "jsonb_build_array", "json_build_array",
    # dates and times
    "to_timestamp", "to_date", "age", "date_part", "date_trunc", "make_date", "make_timestamp",
    "make_timestamptz", "make_interval", "justify_days", "justify_hours", "justify_interval",
    "isfinite", "timezone", "clock_timestamp", "statement_timestamp", "transaction_timestamp",
    "localtimestamp", "current_date",
    # numbers and conditionals
    "abs", "ceil", "ceiling", "floor", "round", "trunc", "sign", "mod", "greatest", "least",
    "num_nulls", "num_nonnulls", "width_bucket",
    # arrays
    "array_length", "cardinality", "array_position", "array_to_string", "string_to_array",
    "array_lower", "array_upper",
})


class ForbiddenFunction(ValueError):
    """User SQL calls a function outside the allow-list."""


def forbidden_calls(tree: exp.Expression) -> list[str]:
    """Names of the calls in `tree` that are neither sqlglot-typed nor in PURE_FUNCTIONS."""
    out = []
    for node in tree.find_all(exp.Anonymous):
        name = str(node.name).lower()
        if name not in PURE_FUNCTIONS and name not in out:
            out.append(name)
    return out


def check_postgres_sql(sql: str, kind: str) -> str | None:
    """Why `sql` (a `where` condition or a `query`) may not run on a Postgres source, or None.

    Syntax errors are left to the connector, which reports them with the position.
    """
    try:
        if kind == "where":
            tree = sqlglot.condition(sql, dialect="postgres")
        else:
            parsed = [s for s in sqlglot.parse(sql, read="postgres") if s is not None]
            if not parsed:
                return None
            tree = parsed[0]
    except (ParseError, ValueError):
        return None
    bad = forbidden_calls(tree)
    if not bad:
        return None
    return (f"calls {', '.join(f'{n}()' for n in bad)}, which memwatch does not allow in a Postgres "
            f"source's {kind}: only pure functions may run there (a function such as dblink_exec "
            "can write through a second connection; see docs/postgres-sources.md)")
