"""What reports read: the facts[] of the JSON contract (REPORT_COLUMNS, streamed) and the
summary counts per label. The column list is named once here; `ReportRow` reads a row
of it by name."""
from __future__ import annotations

import sqlite3
from collections import namedtuple
from typing import Any, Iterator

from memwatch_overlay.overlay.store.facts import ANNOTATIONS_SQL, CONTRADICTED_BY_SQL, LIVE
from memwatch_overlay.overlay.store.sqlhelpers import RepoBase, plain_rows, scope

# The audit report's facts (AuditResult.iter_facts): only the columns of the JSON contract's
# facts[], in its order. Each per-fact subquery is guarded by an uncorrelated EXISTS that
# the database evaluates once per statement (same snapshot), so an overlay without
# contradictions or annotations (detection off, no write-back) skips them; a guarded-off
# subquery gives NULL, which reads as [] like the empty result.
_ANY_CONTRADICTION = "(SELECT EXISTS (SELECT 1 FROM contradictions))"
_ANY_ANNOTATION = ("(SELECT EXISTS (SELECT 1 FROM actions WHERE kind = 'annotate' AND state = 'applied' "
                   "AND undone_at IS NULL))")
REPORT_COLUMNS = (
    ("source", "s.name"), ("table", "f.tbl"), ("pk", "f.pk"), ("ref", "f.ref"),
    ("subject", "f.subject"), ("key", "f.key"), ("text", "f.text"), ("category", "f.category"),
    ("created_at", "f.created_at"), ("updated_at", "f.updated_at"), ("age_days", "f.age_days"),
    ("freshness", "f.freshness"), ("label", "f.label"), ("days_left", "f.days_left"),
    ("days_until_expired", "f.days_until_expired"), ("expires_at", "f.expires_at"),
    ("expired_by", "f.expired_by"), ("confidence", "f.confidence"), ("status", "f.status"),
    ("contradicted_by", f"CASE WHEN {_ANY_CONTRADICTION} THEN ({CONTRADICTED_BY_SQL}) END"),
    ("first_seen", "f.first_seen"),
    ("annotations", f"CASE WHEN {_ANY_ANNOTATION} THEN ({ANNOTATIONS_SQL}) END"),
)
# One row of REPORT_COLUMNS, read by name (ReportRow._make(row)).
ReportRow = namedtuple("ReportRow", [name for name, _ in REPORT_COLUMNS])  # type: ignore[misc]  # names built above
_REPORT_COLUMNS_SQL = ", ".join(sql for _, sql in REPORT_COLUMNS)
REPORT_SELECT = f"SELECT {_REPORT_COLUMNS_SQL} FROM facts f JOIN sources s ON s.id = f.source_id"
# The JSON report's rows (iter_report_line_rows): REPORT_COLUMNS, then the JSON text of the
# created_at, updated_at and expires_at ISO times where the database writes them exactly as
# to_iso() does: a whole number of seconds ('unixepoch' is exact there; to_iso() then has no
# fraction), NULL otherwise, for the report to compute. Postgres: to_char of the UTC
# timestamp (exact for whole seconds), years 1-9999 only (to_iso()'s range; `\"` is a
# literal quote in a to_char pattern, text in plain quotes is copied as it is).
_ISO_JSON = "CASE WHEN {c} = CAST({c} AS INTEGER) THEN strftime('\"%Y-%m-%dT%H:%M:%S+00:00\"', {c}, 'unixepoch') END"
_ISO_JSON_POSTGRES = ("CASE WHEN {c} = trunc({c}) AND {c} BETWEEN -62135596800 AND 253402300799 THEN "
                      "to_char(to_timestamp({c}) AT TIME ZONE 'UTC', "
                      "'\\\"YYYY-MM-DD\"T\"HH24:MI:SS\"+00:00\"\\\"') END")
REPORT_ISO_TIMES = ("created_at", "updated_at", "expires_at")
_LINE_SELECT_SQLITE = (f"SELECT {', '.join(sql for _, sql in REPORT_COLUMNS)}, "
                       + ", ".join(_ISO_JSON.format(c=f"f.{c}") for c in REPORT_ISO_TIMES)
                       + " FROM facts f JOIN sources s ON s.id = f.source_id")
_LINE_SELECT_POSTGRES = (f"SELECT {', '.join(sql for _, sql in REPORT_COLUMNS)}, "
                         + ", ".join(_ISO_JSON_POSTGRES.format(c=f"f.{c}") for c in REPORT_ISO_TIMES)
                         + " FROM facts f JOIN sources s ON s.id = f.source_id")


# The console table's order: live facts stalest first, then the deleted ones.
TABLE_ORDER = "f.status = 'deleted', f.freshness, f.id"
# The facts the partial index facts_stalest holds (migration v08): live, below STALEST_BELOW or
# unscored. The same text as the index's WHERE: SQLite reads a partial index for a query
# whose WHERE has its terms.
STALEST_BELOW = 0.3
_STALEST_WHERE = f"f.{LIVE} AND (f.freshness < {STALEST_BELOW} OR f.freshness IS NULL)"


class ReportsRepo(RepoBase):
    """Mixin of OverlayStore: report rows and summaries."""

    def iter_stalest_rows(self, source_ids: list[int] | None, limit: int) -> Iterator[tuple]:
        """iter_report_rows(source_ids, TABLE_ORDER, limit): the console table's rows.

        On SQLite, first from facts_stalest alone: a live fact below STALEST_BELOW (or with
        no freshness: NULL sorts first) comes before every other live fact and every deleted
        one in TABLE_ORDER, so when `limit` of them exist they are the answer, read in the
        index's order (freshness, id) without a look at any other fact. With fewer (a store
        of fresher facts, a small one), the whole order as before."""
        if self.dialect == "sqlite" and limit > 0:
            where, params = scope("+f.source_id", source_ids)
            sql = (f"SELECT {_REPORT_COLUMNS_SQL} FROM facts f INDEXED BY facts_stalest "
                   f"JOIN sources s ON s.id = f.source_id WHERE {_STALEST_WHERE} {where} "
                   f"ORDER BY f.freshness, f.id LIMIT {int(limit)}")
            try:
                rows = plain_rows(self.conn, self.dialect, sql, params).fetchall()
            except sqlite3.OperationalError:   # no facts_stalest (dropped by a bulk load in progress)
                rows = []
            if len(rows) == limit:
                return iter(rows)
        return self.iter_report_rows(source_ids, order=TABLE_ORDER, limit=limit)

    def iter_report_rows(self, source_ids: list[int] | None = None, order: str = "f.id",
                         limit: int | None = None) -> Iterator[tuple]:
        """Facts (deleted ones too, not forgotten ones) as plain tuples of REPORT_COLUMNS,
        streamed (a server-side cursor on Postgres); the first `limit` only when given
        (a bounded sort, and the subqueries run for those rows alone).

        Unary + keeps SQLite off the source_id index: through it, ORDER BY f.id would sort
        every report row (spilling to temporary files at a million facts) before the first
        one comes out; a scan in id order streams them, and costs a filtered pass over other
        sources' facts (~0.15 s a million) when the audit covers only some sources."""
        where, params = scope("+f.source_id", source_ids)
        sql = f"{REPORT_SELECT} WHERE f.status != 'forgotten' {where} ORDER BY {order}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        if self.dialect == "postgres":
            return self.conn.stream(sql, params)
        return plain_rows(self.conn, self.dialect, sql, params)

    def iter_report_line_rows(self, source_ids: list[int] | None = None) -> Iterator[tuple]:
        """iter_report_rows() in id order, each row followed by the three REPORT_ISO_TIMES
        texts (JSON) the database can write exactly, or NULLs (what the JSON report reads)."""
        where, params = scope("+f.source_id", source_ids)
        select = _LINE_SELECT_POSTGRES if self.dialect == "postgres" else _LINE_SELECT_SQLITE
        sql = f"{select} WHERE f.status != 'forgotten' {where} ORDER BY f.id"
        if self.dialect == "postgres":
            return self.conn.stream(sql, params)
        return plain_rows(self.conn, self.dialect, sql, params)

    def summary(self, source_ids: list[int] | None = None, group_by: str | None = None) -> Any:
        """Counts per label over live facts (deleted/forgotten excluded)."""
        return self._summary(source_ids, group_by, None)[0]

    def summary_if_scored(self, source_ids: list[int] | None, as_of: float) -> dict | None:
        """summary(source_ids) when every live fact of these sources is scored at `as_of`
        (count_unscored() would be 0, so a rescore at `as_of` would write nothing); None
        otherwise (rescore, then ask summary()). The check is a count in the summary's own
        scan: an audit of an unchanged store reads its facts once for both. The first live
        fact is looked at before (one row): at a new as-of it is unscored, and the scan is
        not made for a summary the rescore would void."""
        where, params = scope("+source_id", source_ids)   # unary +: no index, the rowid order (first row first)
        first = self.conn.execute(f"SELECT scored_as_of IS NOT ? FROM facts WHERE +{LIVE} {where} "
                                  "ORDER BY id LIMIT 1", (as_of, *params)).fetchone()
        if first is not None and first[0]:
            return None
        out, unscored = self._summary(source_ids, None, as_of)
        return out if not unscored else None

    def _summary(self, source_ids: list[int] | None, group_by: str | None,
                 scored_at: float | None) -> tuple[Any, int]:
        """(the summary, the live facts not scored at `scored_at`: 0 when it is None).

        The label counts are FILTERed counts (integers: exact in any order). avg(freshness)
        is a float sum taken in the order the plan reads the facts, which this statement
        keeps: the same FROM and WHERE whatever is counted beside it."""
        where, params = scope("f.source_id", source_ids)
        group_col = {"category": "f.category", "source": "s.name", None: "''"}[group_by]
        unscored = ", count(*) FILTER (WHERE f.scored_as_of IS NOT ?) AS unscored" if scored_at is not None else ""
        counts = "".join(f"count(*) FILTER (WHERE f.label = '{label}') AS {label}, "
                         for label in ("fresh", "aging", "stale", "expired"))
        rows = self.conn.execute(
            f"SELECT {group_col} AS grp, count(*) AS total, {counts}"
            "count(*) FILTER (WHERE f.status = 'contradicted') AS contradicted, "
            f"avg(f.freshness) AS avg_freshness{unscored} "
            f"FROM facts f JOIN sources s ON s.id = f.source_id WHERE f.{LIVE} {where} "
            "GROUP BY grp ORDER BY grp", ((scored_at,) if unscored else ()) + params).fetchall()
        deleted = dict(self.conn.execute(
            f"SELECT {group_col} AS grp, count(*) FROM facts f JOIN sources s ON s.id = f.source_id "
            f"WHERE f.status = 'deleted' {where} GROUP BY grp", params).fetchall())
        out = {}
        for r in rows:
            out[r["grp"]] = _summary_dict(r, deleted.get(r["grp"], 0))
        for grp, n in deleted.items():
            out.setdefault(grp, {**_summary_dict(None, n)})
        left = sum(r["unscored"] for r in rows) if unscored else 0
        if group_by is None:
            return out.get("", _summary_dict(None, 0)), left
        return out, left


def _summary_dict(row, deleted: int) -> dict:
    if row is None:
        return {"total": 0, "fresh": 0, "aging": 0, "stale": 0, "expired": 0, "contradicted": 0,
                "avg_freshness": 0.0, "deleted": deleted}
    return {"total": row["total"], "fresh": row["fresh"] or 0, "aging": row["aging"] or 0,
            "stale": row["stale"] or 0, "expired": row["expired"] or 0,
            "contradicted": row["contradicted"] or 0,
            "avg_freshness": round(row["avg_freshness"] or 0.0, 4), "deleted": deleted}
