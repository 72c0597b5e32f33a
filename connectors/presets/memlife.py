"""memlife `SyncMemoryStore`: table `facts` of `<data_dir>/<namespace>/memlife.db`.

- subject: memlife keeps one database per namespace (usually the user) and no user
  column, so the subject is the name of the folder holding the file;
- `created_at` / `updated_at` are epoch floats;
- `superseded_by` is memlife's own verdict on a fact:
  `''` active; `<fact id>` replaced by that (newer) fact through revise_fact()/merge,
  which becomes `replaced_by` (a `value` contradiction, status `contradicted`);
  `__retired__:<reason>` retired by expire_fact(): the source says the fact is no
  longer valid since it was retired, so `expires_at` = its `updated_at` (the
  retirement time) and the label is `expired`.
  In both cases memlife stamped `updated_at` when it superseded the fact, which is
  not a re-learning, so that time does not make the fact fresher.
- `confidence` is not mapped (memlife's own belief score, not an age).

Incremental reads: memlife revises rows in place (`superseded_by`, `updated_at`), which
a rowid cursor would miss, so the cursor also keeps the highest `updated_at` seen and
reads rows with `rowid > last OR updated_at >= last_updated`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

from sqlglot import exp

from memwatch_overlay.connectors import sqlguard
from memwatch_overlay.connectors.base import Record
from memwatch_overlay.connectors.sqlite import SqliteConnector
from memwatch_overlay.connectors.presets import Match, has_columns

RETIRED_PREFIX = "__retired__:"
FACT_COLUMNS = {"id", "content", "created_at", "updated_at", "superseded_by"}


class MemlifeFacts(SqliteConnector):
    preset = "memlife"
    description = "memlife facts table (one memlife.db per namespace; superseded_by honoured)"
    defaults = dict(table="facts", id=["id"], text="content", created_at="created_at",
                    updated_at="updated_at")
    extra_columns = ("superseded_by",)
    # memlife's expire_fact() writes `__retired__:<reason>`; the preset reads it as expired.
    natural_writebacks = {"expire": {"superseded_by": RETIRED_PREFIX + "memwatch {label}"}}

    def __init__(self, source, **kwargs):
        super().__init__(source, **kwargs)
        self._max_updated = None

    @classmethod
    def match(cls, tables):
        reasons = has_columns(tables, "facts", FACT_COLUMNS | {"confidence", "embedding_json"})
        if reasons is None:
            return None
        if has_columns(tables, "episodes", {"task", "outcome", "summary"}):
            reasons.append("memlife episodes table")
        return Match(cls.preset, 1.0, reasons, dict(cls.defaults))

    # -- reading -----------------------------------------------------------------------
    def build_select(self, cursor: dict | None) -> tuple[str, tuple, list[str]]:
        stmt, pks, use_rowid = self.base_select()
        since_updated = (cursor or {}).get("updated_at")
        if not use_rowid or since_updated is None or self.source.updated_at is None:
            return super().build_select(cursor)
        cond = exp.GTE(this=sqlguard.column(self.source.updated_at), expression=exp.Placeholder())
        params: tuple = (since_updated,)
        if cursor.get("rowid") is not None:
            cond = exp.or_(exp.GT(this=exp.column("rowid"), expression=exp.Placeholder()), cond)
            params = (int(cursor["rowid"]), since_updated)
        stmt = stmt.where(exp.paren(cond)).order_by(exp.column("rowid"))
        return stmt.sql(dialect=self.dialect), params, pks

    def read(self, cursor: dict | None = None) -> Iterator[Record]:
        self._max_updated = (cursor or {}).get("updated_at")
        yield from super().read(cursor)
        self.cursor = {**(self.cursor or {}), "updated_at": self._max_updated}

    def row_to_record(self, row, pks, mapping) -> Record | None:
        raw_updated = row.get(self.source.updated_at) if self.source.updated_at else None
        if isinstance(raw_updated, (int, float)) and (self._max_updated is None or raw_updated > self._max_updated):
            self._max_updated = raw_updated
        rec = super().row_to_record(row, pks, mapping)
        if rec is None:
            return None
        if rec.subject is None:
            rec.subject = self.namespace()
        marker = str(row.get("superseded_by") or "").strip()
        if marker.startswith(RETIRED_PREFIX):
            rec.expires_at = rec.updated_at if rec.updated_at is not None else rec.created_at
            rec.updated_at = None
        elif marker:
            rec.updated_at = None
            rec.replaced_by = {pks[0]: marker} if len(pks) == 1 else None
            rec.replaced_note = f"memlife superseded_by = {marker} (revise_fact/merge)"
        return rec

    def namespace(self) -> str | None:
        """The folder holding the database: memlife's `<data_dir>/<namespace>/memlife.db`."""
        path = self.source.resolved_path
        name = Path(path).resolve().parent.name if path is not None else ""
        return name or None
