"""What reports read: the facts[] of the JSON contract (REPORT_COLUMNS, streamed) and the
summary counts per label. The column list is named once here; `ReportRow` reads a row
of it by name."""
from __future__ import annotations

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
REPORT_SELECT = (f"SELECT {', '.join(sql for _, sql in REPORT_COLUMNS)} "
                 "FROM facts f JOIN sources s ON s.id = f.source_id")
# The JSON report's rows (iter_report_line_rows): REPORT_COLUMNS, then the JSON text of the
# created_at, updated_at and expires_at ISO times where SQLite writes them exactly as
# to_iso() does: a whole number of seconds ('unixepoch' is exact there; to_iso() then has no
# fraction), NULL otherwise (and on Postgres), for the report to compute.
_ISO_JSON = "CASE WHEN {c} = CAST({c} AS INTEGER) THEN strftime('\"%Y-%m-%dT%H:%M:%S+00:00\"', {c}, 'unixepoch') END"
REPORT_ISO_TIMES = ("created_at", "updated_at", "expires_at")
_LINE_SELECT_SQLITE = (f"SELECT {', '.join(sql for _, sql in REPORT_COLUMNS)}, "
                       + ", ".join(_ISO_JSON.format(c=f"f.{c}") for c in REPORT_ISO_TIMES)
                       + " FROM facts f JOIN sources s ON s.id = f.source_id")
_LINE_SELECT_POSTGRES = (f"SELECT {', '.join(sql for _, sql in REPORT_COLUMNS)}, NULL, NULL, NULL "
                         "FROM facts f JOIN sources s ON s.id = f.source_id")


class ReportsRepo(RepoBase):
    """Mixin of OverlayStore: report rows and summaries."""

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
        texts (JSON) SQLite can write exactly, or NULLs (what the JSON report reads)."""
        where, params = scope("+f.source_id", source_ids)
        select = _LINE_SELECT_POSTGRES if self.dialect == "postgres" else _LINE_SELECT_SQLITE
        sql = f"{select} WHERE f.status != 'forgotten' {where} ORDER BY f.id"
        if self.dialect == "postgres":
            return self.conn.stream(sql, params)
        return plain_rows(self.conn, self.dialect, sql, params)

    def summary(self, source_ids: list[int] | None = None, group_by: str | None = None) -> Any:
        """Counts per label over live facts (deleted/forgotten excluded)."""
        where, params = scope("f.source_id", source_ids)
        group_col = {"category": "f.category", "source": "s.name", None: "''"}[group_by]
        rows = self.conn.execute(
            f"SELECT {group_col} AS grp, count(*) AS total, "
            "sum(CASE WHEN f.label = 'fresh' THEN 1 ELSE 0 END) AS fresh, sum(CASE WHEN f.label = 'aging' THEN 1 ELSE 0 END) AS aging, "
            "sum(CASE WHEN f.label = 'stale' THEN 1 ELSE 0 END) AS stale, sum(CASE WHEN f.label = 'expired' THEN 1 ELSE 0 END) AS expired, "
            "sum(CASE WHEN f.status = 'contradicted' THEN 1 ELSE 0 END) AS contradicted, avg(f.freshness) AS avg_freshness "
            f"FROM facts f JOIN sources s ON s.id = f.source_id WHERE f.{LIVE} {where} "
            "GROUP BY grp ORDER BY grp", params).fetchall()
        deleted = dict(self.conn.execute(
            f"SELECT {group_col} AS grp, count(*) FROM facts f JOIN sources s ON s.id = f.source_id "
            f"WHERE f.status = 'deleted' {where} GROUP BY grp", params).fetchall())
        out = {}
        for r in rows:
            out[r["grp"]] = _summary_dict(r, deleted.get(r["grp"], 0))
        for grp, n in deleted.items():
            out.setdefault(grp, {**_summary_dict(None, n)})
        if group_by is None:
            return out.get("", _summary_dict(None, 0))
        return out


def _summary_dict(row, deleted: int) -> dict:
    if row is None:
        return {"total": 0, "fresh": 0, "aging": 0, "stale": 0, "expired": 0, "contradicted": 0,
                "avg_freshness": 0.0, "deleted": deleted}
    return {"total": row["total"], "fresh": row["fresh"] or 0, "aging": row["aging"] or 0,
            "stale": row["stale"] or 0, "expired": row["expired"] or 0,
            "contradicted": row["contradicted"] or 0,
            "avg_freshness": round(row["avg_freshness"] or 0.0, 4), "deleted": deleted}
