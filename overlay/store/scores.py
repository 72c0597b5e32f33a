"""Scores of stored facts: the store hands out the inputs of the facts that need scoring and
takes the scores back. It never scores anything itself: the engine reads pages of
`SCORE_INPUTS`, computes, and writes `ScoreUpdate`s (the dependency points down: engine ->
store)."""
from __future__ import annotations

import itertools
from typing import Iterator, NamedTuple

from memwatch_overlay.overlay.store.facts import LIVE, PG_COPY_MIN
from memwatch_overlay.overlay.store.sqlhelpers import RepoBase, scope

# The scheduled rescore's filter. Unary + keeps the planner on the next_change index (a
# range of due facts) rather than an index on status (every live fact).
DUE_WHERE = "next_change <= ? AND +status IN ('active', 'contradicted')"
# What scoring a stored fact reads (SyncEngine.score_row reads these by name).
SCORE_INPUTS = ("id", "category", "created_at", "updated_at", "refreshed_at", "first_seen", "accessed_at",
                "access_count", "expires_at", "confirmations")
_SCORE_INPUTS_SQL = ", ".join(SCORE_INPUTS)


class ScoreUpdate(NamedTuple):
    """The scores of one fact at `scored_as_of`, as write_scores() stores them."""

    freshness: float
    label: str
    age_days: float
    days_left: float | None
    days_until_expired: float | None
    expired_by: str | None
    confidence: float | None
    scored_as_of: float
    next_change: float | None
    id: int


_WRITE_SQL = ("UPDATE facts SET " + ", ".join(f"{c} = ?" for c in ScoreUpdate._fields if c != "id")
              + " WHERE id = ?")
# Pages of at least PG_COPY_MIN scores go to Postgres by COPY (write_scores); fewer, by statements.
_PG_SCORES_TABLE = ("CREATE TEMP TABLE IF NOT EXISTS mw_scores (freshness DOUBLE PRECISION, label TEXT, "
                    "age_days DOUBLE PRECISION, days_left DOUBLE PRECISION, days_until_expired DOUBLE PRECISION, "
                    "expired_by TEXT, confidence DOUBLE PRECISION, scored_as_of DOUBLE PRECISION, "
                    "next_change DOUBLE PRECISION, id BIGINT)")
_PG_WRITE_FROM_COPY = (
    "UPDATE facts SET " + ", ".join(f"{c} = s.{c}" for c in ScoreUpdate._fields if c not in ("id", "next_change"))
    + ", next_change = CASE WHEN abs(s.next_change - facts.next_change) < 0.001 THEN facts.next_change "
      "ELSE s.next_change END FROM temp.mw_scores s WHERE facts.id = s.id AND facts.id BETWEEN ? AND ?")


class ScoresRepo(RepoBase):
    """Mixin of OverlayStore: score inputs out, scores in."""

    def count_unscored(self, as_of: float, source_ids: list[int] | None = None) -> int:
        """How many live facts (of these sources) unscored_pages() would hand out at `as_of`."""
        where, params = scope("source_id", source_ids)
        return self.conn.execute(f"SELECT count(*) FROM facts WHERE {LIVE} AND scored_as_of IS NOT ? {where}",
                                 (as_of, *params)).fetchone()[0]

    def unscored_pages(self, as_of: float, source_ids: list[int] | None = None,
                       fact_ids: list[int] | None = None, batch: int = 5000) -> Iterator[list]:
        """Pages (lists of rows with SCORE_INPUTS) of the live facts not scored at `as_of`.

        Read lazily while the caller writes each page back: call inside a transaction.
        Postgres streams them through a server-side cursor (a plain psycopg cursor would
        hold a million facts' inputs client-side)."""
        where, params = scope("source_id", source_ids)
        if fact_ids is not None:
            more, more_params = scope("id", fact_ids)
            where, params = where + more, params + more_params
        sql = f"SELECT {_SCORE_INPUTS_SQL} FROM facts WHERE {LIVE} AND scored_as_of IS NOT ? {where}"
        if self.dialect == "postgres":
            stream = self.conn.stream(sql, (as_of, *params), itersize=batch)
            yield from iter(lambda: list(itertools.islice(stream, batch)), [])
            return
        rows = self.conn.execute(sql, (as_of, *params))
        while True:
            page = rows.fetchmany(batch)
            if not page:
                return
            yield page

    def due_pages(self, now: float, source_ids: list[int] | None = None, batch: int = 5000) -> Iterator[list]:
        """Pages of live facts whose label can have changed by `now` (`next_change <= now`, indexed).

        Each page is fetched whole after the previous one was written back, so the caller
        must move every fact it scores out of the due range (a next_change > `now`, or
        None) or it comes back. Facts that stopped being live (deleted, forgotten) leave
        the schedule first. Call inside a transaction."""
        where, params = scope("+source_id", source_ids)   # unary +: the next_change index, not source_id's
        self.conn.execute(f"UPDATE facts SET next_change = NULL WHERE next_change <= ? "
                          f"AND NOT +status IN ('active', 'contradicted') {where}", (now, *params))
        while True:
            page = self.conn.execute(
                f"SELECT {_SCORE_INPUTS_SQL} FROM facts WHERE {DUE_WHERE} {where} LIMIT ?",
                (now, *params, batch)).fetchall()
            if not page:
                return
            yield page

    def write_scores(self, updates: list[ScoreUpdate]) -> int:
        if self.dialect == "postgres" and len(updates) >= PG_COPY_MIN:
            self._write_scores_by_copy(updates)
        else:
            # plain tuples: sqlite3 binds a NamedTuple a column at a time through the sequence
            # protocol (facts.upsert_facts has the figures)
            self.conn.executemany(_WRITE_SQL, map(tuple, updates))
        return len(updates)

    def _write_scores_by_copy(self, updates: list[ScoreUpdate]) -> None:
        """Postgres: the page COPYed into a temp table, then one UPDATE joined on id.

        A fact's next label change is an instant that rescoring at a later as-of finds again
        up to float rounding; the stored value is kept when the new one is within a
        millisecond of it, so that no indexed column changes and Postgres can update the row
        in place (a HOT update, on the free space fillfactor leaves: schema._postgres_storage) instead of
        adding an entry to each of the table's indexes."""
        self.conn.execute(_PG_SCORES_TABLE)
        self.conn.copy_rows("temp.mw_scores", ScoreUpdate._fields, updates)
        ids = [u.id for u in updates]
        # the id range lets the planner read just the page's rows of `facts` (without it: a hash
        # join over a scan of the whole table, per page)
        self.conn.execute(_PG_WRITE_FROM_COPY, (min(ids), max(ids)))
        self.conn.execute("DELETE FROM temp.mw_scores")
