"""The plain facts rescored in SQL: one UPDATE, no round trip through Python per fact.

A re-audit at a new as-of (and the daemon's due rescore) rescores every fact. Most facts are
*plain* (scoring.plain_scorer's case: never accessed, no access count, no expiry of their own,
never re-confirmed, in a configured category without `ttl_days`); their scores depend only on
when they were learned and on a few per-category constants. Here those facts are scored by the
database itself, on SQLite (its math functions, 3.35+) and on Postgres, with plain_scorer's
operations in plain_scorer's order so that every stored figure is the same double:

- the per-category constants (scoring.PlainConstants) go into a small temp table, joined on
  the fact's category; a category the config does not name is left to Python (it scores as
  `general`);
- each layer of the query computes one step (the age; the two powers; the three logs; the
  rounded freshness; the rest) and is fenced (`OFFSET 0`) so that neither SQLite nor
  Postgres flattens it into the next, which would recompute pow() and ln() at every use;
- fast_round(x, n) is k / 10**n where k is y = x * 10**n rounded to an integer: (y + 1.5 * 2**52)
  - 1.5 * 2**52 (exact for 0 <= y < 2**51). fast_round leaves a tie (|y - k| = 0.5) and
  y >= 1e15 to round(), which reads x's exact binary value; such a fact is not updated here
  and the caller's Python pass scores it (so does a fact old enough for a power to come near
  underflow, which Postgres reports as an error).

tests/test_rescore_sql.py holds the stored rows equal to the Python path's, bit for bit, on
random facts, exact ties, near-ties and threshold crossings, on both databases.
"""
from __future__ import annotations

import math
import sqlite3
from typing import Any, Mapping

from memwatch_overlay.core.vocab import LIVE_STATUSES
from memwatch_overlay.overlay.store.sqlhelpers import RepoBase, scope

# What the SQLite build must offer (math functions are a compile-time option); without them
# rescore_plain() returns None and the engine scores every fact in Python.
MATH_PROBE = "SELECT pow(2.0, 0.5), ln(2.0)"
# A power below e**-700 is near underflow (e**-745): such facts (ages of centuries) go to Python.
MIN_LOG_POWER = 700.0
_LN2 = math.log(2.0)
_DAY = "86400.0"
_SHIFT = "6755399441055744.0"      # 1.5 * 2**52: (y + _SHIFT) - _SHIFT is y rounded half-even
_PLAIN_TABLE = ("CREATE TEMP TABLE IF NOT EXISTS mw_plain (category TEXT PRIMARY KEY, "
                "decay DOUBLE PRECISION, log_decay DOUBLE PRECISION, max_age DOUBLE PRECISION)")
_FENCE = {"sqlite": "LIMIT -1 OFFSET 0", "postgres": "OFFSET 0"}   # keeps a subquery a layer of its own


def _rounded(x: str, ndigits: int) -> str:
    """fast_round(x, ndigits) in SQL for 0 <= x * 10**ndigits < 1e15; NULL where fast_round
    would defer to round() (a tie: |y - k| = 0.5)."""
    p = f"{float(10 ** ndigits)!r}"
    y = f"{x} * {p}"
    k = f"(({y} + {_SHIFT}) - {_SHIFT})"
    return f"(CASE WHEN abs({y} - {k}) = 0.5 THEN NULL ELSE {k} / {p} END)"


def _until(threshold_param: str, rounded_log: str) -> str:
    """plain_scorer's until(threshold, base) for threshold > 0, from ln(threshold / base) / log_d."""
    return (f"(CASE WHEN base < {threshold_param} THEN 0.0 WHEN {rounded_log} > 0.0 THEN {rounded_log} "
            f"ELSE 0.0 END)")


class PlainRescoreRepo(RepoBase):
    """Mixin of OverlayStore: the plain facts' rescore as one set-based UPDATE."""

    _sql_math: bool | None = None

    def has_sql_math(self) -> bool:
        """Can this overlay's database compute pow() and ln()? (Postgres always can.)"""
        if self._sql_math is None:
            if self.dialect == "postgres":
                self._sql_math = True
            else:
                try:
                    self.conn.execute(MATH_PROBE).fetchall()
                    self._sql_math = True
                except sqlite3.OperationalError:
                    self._sql_math = False
        return self._sql_math

    def rescore_plain(self, as_of: float, constants: Mapping[str, Any], source_ids: list[int] | None = None,
                      *, due: float | None = None, floor: float | None = None, ahead: bool = False) -> int | None:
        """Score at `as_of` the plain live facts of these categories (name -> PlainConstants,
        every threshold > 0) that are not scored at `as_of` (or, with `due`, whose
        `next_change <= due`), as score_fact would, and store the scores as write_scores
        would (next_change = as_of + days * DAY, 0.0 when `ahead`, at least `floor`; on
        Postgres kept when within 1 ms of the stored one). Facts it leaves are still
        unscored (or due) for the Python pass. Returns how many it scored; None when the
        database has no math functions. Call inside a transaction."""
        if not self.has_sql_math():
            return None
        if not self.load_plain_constants(constants):
            return 0
        conn = self.conn
        sql, params = self._plain_update(as_of, next(iter(constants.values())), source_ids, due, floor, ahead)
        n = conn.execute(sql, params).rowcount
        conn.execute("DELETE FROM temp.mw_plain")
        return n

    def load_plain_constants(self, constants: Mapping[str, Any]) -> list[str]:
        """Fill TEMP mw_plain with the categories (name -> PlainConstants) whose figures SQL
        computes (every threshold > 0, figures in range: `_fits`); their names."""
        rows = [(name, c.decay, c.log_decay, _max_age(c)) for name, c in constants.items() if _fits(c)]
        conn = self.conn
        conn.execute(_PLAIN_TABLE)
        conn.execute("DELETE FROM temp.mw_plain")
        if rows:
            conn.executemany("INSERT INTO temp.mw_plain VALUES (?, ?, ?, ?)", rows)
        return [r[0] for r in rows]

    def _plain_update(self, as_of: float, c, source_ids: list[int] | None, due: float | None,
                      floor: float | None, ahead: bool) -> tuple[str, tuple]:
        """The UPDATE of rescore_plain and its parameters; `c`: one category's PlainConstants
        (the thresholds and the confidence lifecycle are the same for every category)."""
        fence = _FENCE[self.dialect]
        # unary +: a scan (or the next_change index), not the source_id index and a lookup per fact
        where, scope_params = scope("+f.source_id", source_ids)
        if due is None:
            todo, todo_param = "f.scored_as_of IS NOT ?", as_of
        else:
            todo, todo_param = "f.next_change <= ?", due
        live = ", ".join(f"'{s}'" for s in LIVE_STATUSES)
        age = age_sql(("f.created_at", "f.updated_at", "f.refreshed_at"), "f.first_seen")
        ages = (f"SELECT f.id AS id, {age} AS age, "
                f"c.decay AS d, c.log_decay AS log_d, c.max_age AS max_age "
                f"FROM facts f CROSS JOIN temp.mw_plain c WHERE c.category = f.category "
                f"AND +f.status IN ({live}) AND {todo} AND f.access_count = 0 AND f.accessed_at IS NULL "
                f"AND f.expires_at IS NULL AND f.confirmations = 0{where} {fence}")
        ages_params = (as_of, todo_param, *scope_params)
        scored, scored_params = self.plain_scores_select(ages, ages_params, c, as_of, ahead)
        floored = "CASE WHEN s.nxt < ? THEN ? ELSE s.nxt END"
        if self.dialect == "postgres":
            # write_scores' COPY path: an instant found again up to float rounding is kept (HOT updates)
            next_change = (f"CASE WHEN abs(({floored}) - facts.next_change) < 0.001 THEN facts.next_change "
                           f"ELSE {floored} END")
            next_params: tuple = (floor, floor, floor, floor)
        else:
            next_change, next_params = floored, (floor, floor)
        sql = (f"UPDATE facts SET freshness = s.freshness, label = s.label, age_days = s.age_days, "
               f"days_left = s.days_left, days_until_expired = s.until_expired, expired_by = NULL, "
               f"confidence = s.confidence, scored_as_of = ?, next_change = {next_change} "
               f"FROM ({scored}) s WHERE facts.id = s.id AND s.freshness IS NOT NULL AND s.age_days IS NOT NULL "
               f"AND s.days_left IS NOT NULL AND s.until_expired IS NOT NULL AND s.confidence IS NOT NULL")
        return sql, (as_of, *next_params, *scored_params)

    def plain_scores_select(self, ages: str, ages_params: tuple, c, as_of: float, ahead: bool) -> tuple[str, tuple]:
        """A SELECT of (id, label, freshness, age_days, days_left, until_expired, confidence,
        nxt) scoring at `as_of` the rows of `ages` (a SELECT of id, age in days (>= 0), d,
        log_d, max_age: a fact's age and its category's mw_plain constants) as plain_scorer
        would, with its parameters. A figure fast_round leaves to round() comes out NULL, and a
        row at or past max_age not at all: such a fact is Python's. `c`: one category's
        PlainConstants (the thresholds and the confidence lifecycle are every category's)."""
        fence = _FENCE[self.dialect]
        fresh, aging, stale = float(c.fresh), float(c.aging), float(c.stale)
        lo, hl, start = float(c.confidence_floor), float(c.confidence_half_life), float(c.confidence_start)
        powers = (f"SELECT id, age, log_d, pow(d, age) AS base, pow(0.5, age / ?) AS cd "
                  f"FROM ({ages}) a WHERE age < max_age {fence}")
        powers_params = (hl, *ages_params)
        logs = (f"SELECT id, age, base, ln(? / base) / log_d AS lf, ln(? / base) / log_d AS la, "
                f"ln(? / base) / log_d AS ls, ? * cd AS conf FROM ({powers}) b {fence}")
        logs_params = (fresh, aging, stale, start, *powers_params)
        # a NULL figure below is a tie fast_round leaves to round(): the fact is not updated
        value = (f"SELECT id, {_rounded('(CASE WHEN base < 1.0 THEN base ELSE 1.0 END)', 9)} AS v9, "
                 f"{_rounded('age', 6)} AS age6, "
                 f"{_until('?', 'lf')} AS uf, {_until('?', 'la')} AS ua, {_until('?', 'ls')} AS us, "
                 f"CASE WHEN conf > ? THEN conf ELSE ? END AS cf FROM ({logs}) l {fence}")
        value_params = (fresh, aging, stale, lo, lo, *logs_params)
        change = "(CASE WHEN v9 >= ? THEN uf WHEN v9 >= ? THEN ua WHEN v9 >= ? THEN us END)"
        scored = (f"SELECT id, CASE WHEN v9 >= ? THEN 'fresh' WHEN v9 >= ? THEN 'aging' WHEN v9 >= ? THEN 'stale' "
                  f"ELSE 'expired' END AS label, {_rounded('v9', 6)} AS freshness, age6 AS age_days, "
                  f"{_rounded('uf', 3)} AS days_left, {_rounded('us', 3)} AS until_expired, "
                  f"{_rounded('cf', 6)} AS confidence, "
                  f"CASE WHEN {change} IS NULL THEN NULL WHEN ? = 1 THEN 0.0 ELSE ? + {change} * {_DAY} END AS nxt "
                  f"FROM ({value}) v {fence}")
        thresholds = (fresh, aging, stale)
        scored_params = (*thresholds, *thresholds, int(ahead), as_of, *thresholds, *value_params)
        return scored, scored_params


def age_sql(times: tuple[str, ...], otherwise: str) -> str:
    """A fact's age in days at the as-of (the expression's first `?`) as plain_scorer takes
    it: since the latest of `times` that is not NULL, else since `otherwise` (a column or
    another `?`); at least 0.0. (Each COALESCE below is one of the times when any is not
    NULL: SQL's max() of a NULL is NULL. One time needs no max(): max() of one argument is
    SQLite's aggregate.)"""
    if len(times) == 1:
        latest = times[0]
    else:
        latest = "max(" + ", ".join(f"COALESCE({', '.join(times[i:] + times[:i])})"
                                    for i in range(len(times))) + ")"
    return f"max(0.0, (? - COALESCE({latest}, {otherwise})) / {_DAY})"


def _max_age(c) -> float:
    """Ages below this keep both powers far from underflow (the Python pass takes older facts)
    and age * 1e6 well below 1e15 (fast_round's own range)."""
    return min(MIN_LOG_POWER / -c.log_decay, MIN_LOG_POWER / _LN2 * c.confidence_half_life, 1e8)


def _fits(c) -> bool:
    """The constants keep every figure in _rounded's range: thresholds > 0 (until() is a
    number of days, at most ln(threshold) / log_d), a positive confidence with floor >= 0."""
    thresholds = (c.fresh, c.aging, c.stale)
    return (all(t > 0 for t in thresholds) and max(math.log(min(thresholds)) / c.log_decay, 0.0) < 1e11
            and c.confidence_start > 0 and c.confidence_floor >= 0 and c.confidence_half_life > 0)
