"""A re-audit's set comparison: a SQLite source table against its stored facts, in SQL.

A full read with an unchanged configuration (the source's fingerprint) only needs to know
which rows differ from their facts. For a plain table mapping (connectors/sqlite.py
`compare_spec()`) the overlay's connection ATTACHes the source file read-only (a
`file:…?mode=ro` URI) and compares each row with the fact of the same key on the
(source_id, pk) index: text, key, subject, category column, access count, table, status
and the four times. Matching facts go to TEMP `mw_seen` (what the deletion mark reads);
the rowids of the other rows (changed, new, or a value the comparison does not decide
itself) are handed back, and only those become Records and take the ordinary compare path
(overlay/engine/sync.py `_unchanged_test`).

The comparison must never call a row unchanged that `_unchanged_test` would call changed;
the reverse only costs speed. So it matches a row only when every value is of the kind the
connector's tuple path reads as itself:
- text, key, subject: text equal byte for byte (a column without TEXT affinity is also
  checked to hold text); an empty key/subject is NULL, as the connector reads it;
- a time: NULL for NULL, else a whole-second epoch whose canonical text
  (`YYYY-MM-DD HH:MM:SS`, with `T`, or a midnight date alone) is the source's text: such
  text is parsed by Python to exactly that epoch;
- the key: the pk_json() text, built for integer values and for printable-ASCII text
  without quote or backslash (anything else is not matched);
- a mapped category column: NULL or empty only, and the fact given none before
  (`category_given` NULL); a category of the row's own is re-categorised in Python;
- status `active` only (a forgotten, contradicted or deleted fact is judged in Python).

Run outside the sync's transaction, in autocommit, one statement per page of source rows:
no lock on the source outlives a page (a transaction that read an ATTACHed file would hold
it until COMMIT, and DETACH is refused inside one). The caller checks the overlay's
`data_version` inside its transaction: a commit by another connection in between voids it.
"""
from __future__ import annotations

import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, NamedTuple

from memwatch_overlay.overlay.store.sqlhelpers import RepoBase, id_chunks, placeholders

SCHEMA = "mw_src"             # the ATTACHed source's schema name
PAGE_ROWS = 10_000            # source rows per statement (as the connector pages a full read)
UNMATCHED_MAX = 20_000        # differing facts the walk in id order accounts for itself (_whole_unchanged)
_MIN_EPOCH = -62135596800     # 0001-01-01: the earliest time Python's datetime parses
_TIMES = ("created_at", "updated_at", "accessed_at", "expires_at")


class CompareRepo(RepoBase):
    """Mixin of OverlayStore: the set comparison of a SQLite source table with its facts."""

    def can_compare_in_sql(self) -> bool:
        """A SQLite overlay, outside any transaction, whose SQLite reads ATTACH URIs (a
        build without USE_URI would take `file:…?mode=ro` for a file name and create it)."""
        if self.dialect != "sqlite" or self.conn.in_transaction:
            return False
        options = {r[0] for r in self.conn.execute("PRAGMA compile_options")}
        return "USE_URI" in options

    def in_transaction(self) -> bool:
        return bool(self.conn.in_transaction)

    def facts_state(self, source_id: int) -> list[int]:
        """[facts, largest changed_sync, contradicted, deleted, forgotten] of a source: what a
        recorded snapshot (overlay/engine/source_snapshot.py) holds of its facts. Read from the
        (source_id, changed_sync) index and the partial index of facts that are not active."""
        total, last = self.conn.execute("SELECT count(*), coalesce(max(changed_sync), 0) FROM facts "
                                        "WHERE source_id = ?", (source_id,)).fetchone()
        counts = dict(self.conn.execute(
            "SELECT status, count(*) FROM facts WHERE (status = 'contradicted' OR status = 'deleted' "
            "OR status = 'forgotten') AND +source_id = ? GROUP BY status", (source_id,)).fetchall())
        return [total, last, counts.get("contradicted", 0), counts.get("deleted", 0), counts.get("forgotten", 0)]

    def data_version(self) -> int:
        """PRAGMA data_version: moves when another connection commits to the overlay."""
        return self.conn.execute("PRAGMA data_version").fetchone()[0]

    def compare_source(self, source_id: int, spec, pause: Callable[[float], None] | None = None,
                       page_rows: int = PAGE_ROWS) -> SetComparison | None:
        """Compare the source table `spec` (a connectors.sqlite.CompareSpec) with the facts
        of `source_id` (SetComparison); None when the file SQLite attached is not the source
        or the source stayed locked (nothing was compared).

        First, when the key is one indexed column and the overlay holds this source alone,
        the facts are walked in id order, each looking its row up: when every non-deleted
        fact is its row unchanged and the table has no other row, that is all (`whole`:
        nothing noted, nothing to mark deleted). Else (or at the first page that differs)
        the table is walked in rowid order, the unchanged facts noted in TEMP mw_seen and
        the other rows' rowids returned.

        `pause(seconds the page held the source)` runs after each page but the last (the
        daemon's pacing of rollback-journal stores)."""
        self.begin_unchanged()
        with self.source_attached(spec) as attached:
            if not attached:
                return None
            return self._compare_attached(source_id, spec, pause, page_rows)

    @contextmanager
    def source_attached(self, spec) -> Iterator[bool]:
        """The source file of `spec` ATTACHed read-only as SCHEMA for the block (outside any
        transaction), a lock on it waited for as long as the connector waits (not the
        overlay's 30 s); yields False when it could not be attached or the file SQLite
        attached is not the source. DETACHed after, the busy timeout put back."""
        waits = self.conn.execute("PRAGMA busy_timeout").fetchone()[0]
        self.conn.execute(f"PRAGMA busy_timeout = {int(spec.busy_timeout * 1000)}")
        try:
            self.conn.execute(f"ATTACH DATABASE ? AS {SCHEMA}", (spec.uri,))
        except sqlite3.Error:       # e.g. another text encoding than the overlay's
            self.conn.execute(f"PRAGMA busy_timeout = {int(waits)}")
            yield False
            return
        try:
            yield _attached_is(self.conn, spec.path)
        finally:
            self.conn.execute(f"DETACH DATABASE {SCHEMA}")
            self.conn.execute(f"PRAGMA busy_timeout = {int(waits)}")

    def _compare_attached(self, source_id: int, spec, pause: Callable[[float], None] | None,
                          page_rows: int) -> SetComparison | None:
        """compare_source() with the source attached."""
        try:
            key, same, same_params = _key_sql(spec.pk), *_same_sql(spec)
            table = f"{SCHEMA}.{spec.table_sql}"
            walked = self._whole_unchanged(source_id, spec, table, key, same, same_params, pause, page_rows)
            if walked is not None:
                return walked
            match = (f"INSERT OR IGNORE INTO temp.mw_seen (id) SELECT f.id FROM {table} s "
                     f"CROSS JOIN main.facts f ON f.source_id = ? AND f.pk = {key} "
                     f"WHERE s.rowid > ? AND s.rowid <= ? AND {same}")
            rest = (f"SELECT s.rowid FROM {table} s WHERE s.rowid > ? AND s.rowid <= ? AND NOT EXISTS "
                    f"(SELECT 1 FROM main.facts f WHERE f.source_id = ? AND f.pk = {key} "
                    "AND f.id IN (SELECT id FROM temp.mw_seen)) ORDER BY s.rowid")
            bound = f"SELECT rowid FROM {table} WHERE rowid > ? ORDER BY rowid LIMIT 1 OFFSET ?"
            count = f"SELECT count(*) FROM {table} WHERE rowid > ? AND rowid <= ?"
            rows = matched = 0
            redo: list[int] = []
            after = -(1 << 63)
            while True:
                started = time.monotonic()
                last = self.conn.execute(bound, (after, page_rows - 1)).fetchone()
                upto = (1 << 63) - 1 if last is None else last[0]
                n = page_rows if last is not None else self.conn.execute(count, (after, upto)).fetchone()[0]
                found = self.conn.execute(match, (source_id, after, upto, *same_params)).rowcount
                if found < n:
                    redo += [r[0] for r in self.conn.execute(rest, (after, upto, source_id))]
                rows += n
                matched += found
                if last is None:
                    break
                after = upto
                if pause is not None:
                    pause(time.monotonic() - started)
            return SetComparison(rows, matched, redo, False)
        except sqlite3.OperationalError:   # a lock held past the busy timeout: the Record path reports it
            return None


    def _whole_unchanged(self, source_id: int, spec, table: str, key: str, same: str, params: tuple,
                         pause: Callable[[float], None] | None, page_rows: int) -> SetComparison | None:
        """The comparison by a walk of the facts in id order, each looking its row up: None
        when this walk does not apply (a key of several columns or without an index, other
        sources' facts in the overlay) or cannot account for every row.

        When each non-deleted fact is its row unchanged and the table holds no other row, that
        is `whole`. Otherwise, as long as at most UNMATCHED_MAX facts differ, the walk goes on:
        a differing fact whose key still names a row hands that row back (for the Record path);
        rows beyond the largest rowid seen whose key has no fact are new. When those account
        for every row of the table, nothing is noted in mw_seen: only the differing facts
        (`suspects`) can be unseen, and the deletion mark looks at them alone."""
        if len(spec.pk) != 1 or not spec.pk[0].indexed:
            return None
        if self.conn.execute("SELECT count(*) FROM sources").fetchone()[0] != 1:
            return None
        rows = self.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        first, last = self.conn.execute("SELECT min(id), max(id) FROM facts").fetchone()
        if first is None:
            return None if rows else SetComparison(0, 0, [], True)
        k = spec.pk[0]
        before = len("{" + k.json_name + ': "')          # pk_json text ahead of the value
        seek = f"s.{k.sql} = substr(f.pk, {before + 1}, length(f.pk) - {before + 2})"
        where = "f.id > ? AND f.id <= ? AND +f.source_id = ? AND +f.status != 'deleted'"
        page = (f"SELECT count(*), count(s.rowid), max(s.rowid) FROM main.facts f LEFT JOIN {table} s "
                f"ON {seek} AND f.pk = {key} AND {same} WHERE {where}")
        differing = (f"SELECT f.id FROM main.facts f LEFT JOIN {table} s ON {seek} AND f.pk = {key} AND {same} "
                     f"WHERE {where} AND s.rowid IS NULL")
        facts = matched = 0
        top = -(1 << 63)                                # the largest rowid of a matched row
        unmatched: list[int] = []
        after = first - 1
        while after < last:
            started = time.monotonic()
            upto = min(after + page_rows, last)
            n, found, largest = self.conn.execute(page, (*params, after, upto, source_id)).fetchone()
            if found != n:     # (the page once more for its ids: cheaper than collecting on every page)
                unmatched += [r[0] for r in self.conn.execute(differing, (*params, after, upto, source_id))]
                if len(unmatched) > UNMATCHED_MAX:
                    return None
            facts += n
            matched += found
            if largest is not None and largest > top:
                top = largest
            after = upto
            if pause is not None and after < last:
                pause(time.monotonic() - started)
        if not unmatched and facts == rows:
            return SetComparison(rows, matched, [], True)
        redo = self._rows_of_facts(table, seek, key, unmatched)
        if redo and max(redo) > top:
            top = max(redo)
        new = rows - matched - len(redo)       # (< 0 cannot be matched below either)
        if new:
            fresh = [r[0] for r in self.conn.execute(
                f"SELECT s.rowid FROM {table} s WHERE s.rowid > ? AND NOT EXISTS (SELECT 1 FROM main.facts f "
                f"WHERE f.source_id = ? AND f.pk = {key}) ORDER BY s.rowid", (top, source_id))]
            if len(fresh) != new:
                return None
            redo += fresh
        return SetComparison(rows, matched, sorted(redo), False, unmatched)

    def _rows_of_facts(self, table: str, seek: str, key: str, fact_ids: list[int]) -> list[int]:
        """The rowids of the rows these facts' keys name (a key that names none: no rowid)."""
        redo = []
        for chunk in id_chunks(fact_ids):
            redo += [r[0] for r in self.conn.execute(
                f"SELECT s.rowid FROM main.facts f JOIN {table} s ON {seek} AND f.pk = {key} "
                f"WHERE f.id IN ({placeholders(len(chunk))})", chunk)]
        return redo


class SetComparison(NamedTuple):
    """What compare_source() found: source rows read, rows whose fact is unchanged, the
    rowids of the other rows, and `whole`: every non-deleted fact of the source is one of
    the unchanged (then none is noted in mw_seen: nothing is to be marked deleted)."""

    rows: int
    matched: int
    redo: list[int]
    whole: bool
    suspects: list[int] | None = None   # every row accounted for: the facts that differed (None: not known)


def _attached_is(conn, path: Path) -> bool:
    """Whether the ATTACHed file is the source (its URI was read as a URI, not a file name)."""
    for _, name, file in conn.execute("PRAGMA database_list"):
        if name == SCHEMA:
            return bool(file) and Path(file).resolve() == path
    return False


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _key_sql(pk) -> str:
    """SQL over `s` giving the row's pk_json() text, or NULL when a value needs an escape
    (or is neither an integer nor text): such a row is not matched."""
    # the literals between two values are one string each: every `||` is a concatenation per row
    parts, checks, before = [], [], "{"
    for k in pk:
        v = f"s.{k.sql}"
        parts += [_literal(before + k.json_name + ': "'), v]
        before = '", '
        if not k.integer:
            checks.append(f"(typeof({v}) = 'integer' OR (typeof({v}) = 'text' AND {v} NOT GLOB '*[^ -~]*' "
                          f"AND instr({v}, '\"') = 0 AND instr({v}, '\\') = 0))")
    text = " || ".join(parts + [_literal('"}')])
    return f"(CASE WHEN {' AND '.join(checks)} THEN {text} END)" if checks else f"({text})"


def _same_sql(spec) -> tuple[str, tuple]:
    """The condition (over `s`, the source row, and `f`, its fact) under which upserting the
    row's Record would leave the fact as it is; and its parameters."""
    fields = spec.fields
    conds = ["+f.status = 'active'", "+f.tbl = ?"]

    def text_of(name: str) -> str:      # s.<column> holds text (TEXT affinity: text, NULL or a blob)
        fld = fields[name]
        return "" if fld.text_affinity else f" AND typeof(s.{fld.sql}) = 'text'"

    conds.append(f"f.text = s.{fields['text'].sql} COLLATE BINARY{text_of('text')}")
    for name in ("subject", "key"):
        if name not in fields:
            conds.append(f"f.{name} IS NULL")
            continue
        v = f"s.{fields[name].sql}"
        # (an OR, not a CASE: the usual equal value decides it in one test)
        conds.append(f"(f.{name} = {v} COLLATE BINARY{text_of(name)} "
                     f"OR (f.{name} IS NULL AND ({v} IS NULL OR {v} = '')))")
    if "category" in fields:
        v = f"s.{fields['category'].sql}"
        # and the fact was not given one either (a cleared column is a change: migrations/v10)
        conds.append(f"({v} IS NULL OR {v} = '') AND f.category_given IS NULL")
    if "access_count" in fields:
        v = f"s.{fields['access_count'].sql}"
        conds.append(f"f.access_count = coalesce({v}, 0) AND typeof({v}) IN ('integer', 'null')")
    else:
        conds.append("f.access_count = 0")
    for name in _TIMES:
        if name not in fields:
            conds.append(f"f.{name} IS NULL")
            continue
        v, t = f"s.{fields[name].sql}", f"f.{name}"
        # (one CASE, not `v = a OR v = b`: SQLite turns that into `v IN (a, b)` and formats both)
        conds.append(
            f"CASE WHEN {v} IS NULL THEN {t} IS NULL "
            f"WHEN {t} != CAST({t} AS INTEGER) OR {t} < {_MIN_EPOCH} THEN 0 "
            f"WHEN {v} = datetime({t}, 'unixepoch') COLLATE BINARY THEN 1 "
            f"WHEN {v} = strftime('%Y-%m-%dT%H:%M:%S', {t}, 'unixepoch') COLLATE BINARY THEN 1 "
            f"ELSE {v} = date({t}, 'unixepoch') COLLATE BINARY AND {t} % 86400 = 0 END")
    return " AND ".join(conds), (spec.table_name,)
