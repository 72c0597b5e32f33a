"""The `runs` table: one row per audit (or other judged run) with its summary, for trends."""
from __future__ import annotations

import json
import time
from typing import Iterator
from memwatch_overlay.overlay.store.sqlhelpers import RepoBase


class RunsRepo(RepoBase):
    """Mixin of OverlayStore: run history."""

    def record_run(self, kind: str, as_of: float, sources: list[str], passed: bool | None,
                   summary: dict, started_at: float | None = None) -> int:
        cur = self.conn.execute(
            "INSERT INTO runs (started_at, as_of, kind, sources, passed, summary_json) VALUES (?, ?, ?, ?, ?, ?)",
            (started_at or time.time(), as_of, kind, json.dumps(sources),
             None if passed is None else int(passed), json.dumps(summary)))
        return cur.lastrowid

    def runs(self, limit: int = 20) -> list[dict]:
        rows = self.conn.execute("SELECT * FROM runs ORDER BY id DESC LIMIT ?", (limit,)).fetchall()
        return [_run_dict(r) for r in reversed(rows)]

    def iter_runs(self, kind: str | None = None) -> Iterator[dict]:
        """Runs newest first, optionally of one kind (``audit``)."""
        where, params = ("WHERE kind = ?", (kind,)) if kind else ("", ())
        for r in self.conn.execute(f"SELECT * FROM runs {where} ORDER BY id DESC", params):
            yield _run_dict(r)


def _run_dict(r) -> dict:
    return {"id": r["id"], "started_at": r["started_at"], "as_of": r["as_of"], "kind": r["kind"],
            "sources": json.loads(r["sources"]), "passed": None if r["passed"] is None else bool(r["passed"]),
            "summary": json.loads(r["summary_json"])}
