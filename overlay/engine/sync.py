"""One sync of one source: read -> categorise -> score -> persist -> detect, in one transaction.

The overlay keeps, per source, a cursor and a sync number, stored in the same
transaction as the facts (a crash loses the whole sync, never half of it, and the
next sync starts again from the last committed cursor; upserts by key make the
re-read harmless). A full read (audit, a daemon's first sync) sees every live record,
so whatever the overlay holds that was not seen is marked `deleted` in the source.
Incremental reads (`full=False`) pass the stored cursor, touch only what changed and
never mark anything deleted: that is the deletion pass's job (`sync_deletions`, keys
only, at a lower frequency).

Every scored fact also gets `next_change`, the epoch at which its label would change
if nothing else did; `rescore_due()` rescores just the facts whose time has come. Both
let the overlay's database score the plain facts itself (overlay/store/plain_rescore.py).
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import itertools
import json
import queue
import threading
import time
from array import array
from bisect import bisect_left
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, NamedTuple, Sequence

from memwatch_overlay.connectors.base import Connector, Record, make_ref
from memwatch_overlay.connectors.registry import make_connector
from memwatch_overlay.connectors.tabular import naive_iso_epoch
from memwatch_overlay.rules.categorize import Categorizer, unknown_categories_warning
from memwatch_overlay.rules.config import MAPPING_KEYS, Config, SourceConfig
from memwatch_overlay.overlay.engine.scoring import (
    DAY,
    CategoryPolicy,
    Score,
    plain_constants,
    plain_scorer,
    score_fact,
)
from memwatch_overlay.overlay.engine.source_snapshot import (Snapshot, connector_mapping, plain_mapping,
                                                              snapshot_key)
from memwatch_overlay.overlay.store.bulk_load import Staged
from memwatch_overlay.overlay.store.compare import SetComparison
from memwatch_overlay.overlay.store.database import FactRow, OverlayStore, ScoreUpdate
from memwatch_overlay.core.vocab import LIVE_STATUSES

BATCH = 2000
# A first full read of a plain SQLite table of SQL_LOAD_MIN rows or more into a SQLite overlay
# is staged and inserted in SQL (overlay/store/bulk_load.py, SyncEngine._stage_load); below that
# the TEMP tables and statements cost about what they save. False: every row takes the Record
# path (tests/test_sql_first_load.py runs both).
SQL_LOAD = True
SQL_LOAD_MIN = 10_000
SNAPSHOTS = True    # answer an unchanged source's full read from its files' digest (source_snapshot.py)
BULK_MIN = 50_000   # a full sync past this many records (and a quarter of the overlay) loads in bulk
SQL_RESCORE_MIN = 1000   # a rescore of this many facts scores the plain ones in SQL (store.rescore_plain)
PENDING_MAX = 1_000_000   # unchanged facts' ids a full read keeps before noting them (_SeenUnchanged)
# The overlays a Record load writes its pages to from a second thread (SyncEngine._ingest). Not
# SQLite: its upsert binds every row in the writer thread, which takes the GIL back from the
# thread building the next page for every row (sqlite3 releases it around each row's step); a
# 1M-row JSONL first audit ran 57-61 s threaded and 44-54 s with the pages written in the
# sync's own thread (stop 53, docs/benchmarks.md). (A staged load binds in the sync's thread
# and hands the writer only whole statements: it keeps its writer on SQLite.)
WRITER_THREAD_DIALECTS = ("postgres",)
# The phase a sync's on_progress is told while the changed facts' blocks are walked, with the
# facts done so far and `of` how many (overlay/output/progress.py draws it)
DETECT_PHASE = "detecting contradictions"


@dataclass
class SyncStats:
    source: str
    rows_read: int = 0
    records: int = 0
    changed: int = 0
    deleted: int = 0
    contradictions: int = 0
    comparisons: int = 0
    plain_unchanged: int = 0    # rows found unchanged without a Record (read_for_compare's plain rows)
    keys_read: int = 0          # deletion pass: keys read from the source
    missing: int = 0            # deletion pass: source rows the overlay did not have
    full: bool = False
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0


def content_hash(rec: Record) -> str:
    """What makes a fact 'changed' (access counters are not content).

    blake2b over repr(part) + 0x1f for each part, as one string.
    """
    return content_hash_as(rec, rec.category)


def content_hash_as(rec: Record, category: str | None) -> str:
    """content_hash(rec) with `category` in place of rec.category."""
    return content_digest(rec.text, rec.key, rec.subject, category, rec.created_at, rec.updated_at,
                          rec.expires_at, rec.status)


def content_digest(text, key, subject, category, created_at, updated_at, expires_at, status) -> str:
    """content_hash of a record holding these values (the page builders hash without a Record)."""
    data = (f"{text!r}\x1f{key!r}\x1f{subject!r}\x1f{category!r}\x1f{created_at!r}\x1f"
            f"{updated_at!r}\x1f{expires_at!r}\x1f{status!r}\x1f")
    return _blake2b(data.encode("utf-8", "replace"), digest_size=12).hexdigest()


_blake2b = hashlib.blake2b


def pk_json(pk: dict[str, str]) -> str:
    """How a record's key is stored in facts.pk (the deletion pass must match it exactly):
    `json.dumps(pk)`, with a fast path giving the same text for the usual string values."""
    try:
        if len(pk) == 1:
            for k, v in pk.items():
                return "{" + _enc(k) + ": " + _enc(v) + "}"
        return "{" + ", ".join([_enc(k) + ": " + _enc(v) for k, v in pk.items()]) + "}"
    except TypeError:
        return json.dumps(pk, sort_keys=False)


_enc = json.encoder.encode_basestring_ascii   # what json.dumps uses for str (ensure_ascii)


class SyncEngine:
    """Brings the overlay up to date with sources; shared by audit and the daemon."""

    def __init__(self, store: OverlayStore, config: Config, detector=None,
                 detector_factory: Callable[[], object] | None = None):
        self.store = store
        self.config = config
        self._plain_scorers: dict[str, Callable | None] = {}     # category -> plain_scorer (_plain_scorer)
        self.categorizer = Categorizer(config.rules, known=set(config.categories), aliases=config.category_aliases,
                                       max_text_chars=config.max_text_chars)
        self.detector = detector
        # detector_factory() -> the detector, made by the first sync that changed a live fact
        # (compiling the slot pack costs seconds; a re-audit of an unchanged store needs none)
        self.detector_factory = detector_factory
        # guard(store, source_name) -> context manager entered inside each sync's transaction
        # (overlay/store/leases.py fences a sync with the source's lease); None: no guard.
        self.guard: Callable | None = None
        # the detection's worker processes, started before a large first load (_start_walkers)
        self._walkers = None

    # -- what the facts were computed from ------------------------------------------------
    def fingerprint(self, source: SourceConfig) -> str:
        """A hash of everything a source's facts depend on besides the data: mapping, rules,
        categories, thresholds, the confidence lifecycle. The daemon resyncs a source fully
        when it changes (tests/test_fingerprint.py: every config field scoring reads is here)."""
        cfg = self.config
        parts = [source.connector, source.preset, source.target, source.table, source.query, source.id,
                 source.where, source.records, [getattr(source, k) for k in MAPPING_KEYS],
                 source.subject_pattern, sorted(source.subject_map.items()), source.qdrant_path,
                 [(r.category, r.source, r.key, [p.pattern for p in r.text]) for r in cfg.rules],
                 # every field of the scoring policies, so that a new one cannot be forgotten here
                 sorted((k, dataclasses.astuple(p)) for k, p in cfg.categories.items()),
                 sorted(cfg.category_aliases.items()),
                 dataclasses.astuple(cfg.thresholds), dataclasses.astuple(cfg.lifecycle)]
        return hashlib.blake2b(json.dumps(parts, default=str).encode(), digest_size=12).hexdigest()

    # -- scoring ------------------------------------------------------------------------
    def score(self, category: str, learned_at: float | None, as_of: float, access_count: int,
              accessed_at: float | None, expires_at: float | None, confirmed_at: float | None = None,
              confirmations: int = 0) -> Score:
        """Freshness (the design's formula) and confidence (erosion since the last confirmation)."""
        cfg = self.config
        if confirmed_at is None or confirmed_at == learned_at:
            # confirmed when learned: score_fact computes the confidence on the age it has
            return score_fact(as_of, learned_at, cfg.policy(category), cfg.thresholds, access_count,
                              accessed_at, expires_at, lifecycle=cfg.lifecycle, confirmations=confirmations)
        return score_fact(as_of, learned_at, cfg.policy(category), cfg.thresholds, access_count, accessed_at,
                          expires_at, confidence=cfg.lifecycle.confidence(as_of, confirmed_at, confirmations))

    def score_row(self, row, as_of: float) -> Score:
        """Score a stored fact; a person's refresh and first sight count as learning."""
        learned = _latest(row["created_at"], row["updated_at"], row["refreshed_at"])
        if learned is None:
            learned = row["first_seen"]
        return self.score(row["category"], learned, as_of, row["access_count"], row["accessed_at"],
                          row["expires_at"], learned, row["confirmations"])

    @staticmethod
    def next_change_at(as_of: float, score: Score, now: float) -> float | None:
        """Epoch at which `score`'s label next changes (None: never by time alone).

        A label computed for a future moment (`audit --as-of` ahead of the clock) is
        due again at once (0): at the real time it may be a different label.
        """
        if score.next_change_days is None:
            return None
        if as_of > now + 1.0:
            return 0.0
        return as_of + score.next_change_days * DAY

    def rescore(self, as_of: float, source_ids: list[int] | None = None, fact_ids: list[int] | None = None,
                batch: int = 5000) -> int:
        """Live facts not yet scored at `as_of` (audit, report; `fact_ids`: just those).

        A rescore of all facts whose first page holds at least SQL_RESCORE_MIN facts scores
        the plain ones in one SQL UPDATE (store.rescore_plain, the same figures to the bit)
        and the rest here. Rescoring BULK_MIN facts or more (an audit or report at a new
        as-of) also drops the indexes on scores (store.SCORE_INDEXES: `next_change`, the
        stalest facts) for the rewrite and builds them again after, in the same transaction:
        every rescored fact moves in them, in id order, i.e. at random places of the index
        (at 1M facts that was half of the rescore's CPU). Not on Postgres (see
        drop_bulk_indexes)."""
        store = self.store
        now = time.time()
        n = 0
        with store.transaction():
            pages = store.unscored_pages(as_of, source_ids, fact_ids, batch)
            dropped: list[str] = []
            if fact_ids is None:
                first = next(pages, [])
                if len(first) < SQL_RESCORE_MIN:   # a few facts (a re-audit at the same as-of)
                    pages = itertools.chain([first], pages)
                else:
                    pages.close()          # its read ends before the index is dropped
                    if (store.dialect == "sqlite" and store.max_fact_id() >= BULK_MIN
                            and store.count_unscored(as_of, source_ids) >= BULK_MIN):
                        dropped = store.drop_bulk_indexes(store.SCORE_INDEXES)
                    n = self._rescore_in_sql(as_of, source_ids, ahead=as_of > now + 1.0)
                    pages = store.unscored_pages(as_of, source_ids, fact_ids, batch)
            n += self._score_pages(pages, as_of, partial(self.next_change_at, now=now))
            if dropped:
                store.create_indexes(dropped)
            return n

    def rescore_due(self, now: float | None = None, source_ids: list[int] | None = None) -> int:
        """Only facts whose label can have changed by `now` (the daemon's schedule)."""
        now = time.time() if now is None else now
        floor = now + 1e-3
        with self.store.transaction():
            n = self._rescore_in_sql(now, source_ids, due=now, floor=floor)
            return n + self._score_pages(self.store.due_pages(now, source_ids), now,
                                         partial(self.next_change_at, now=now), floor=floor)

    def _rescore_in_sql(self, as_of: float, source_ids: list[int] | None, *, due: float | None = None,
                        floor: float | None = None, ahead: bool = False) -> int:
        """The plain facts (plain_scorer's) of the configured categories, scored by the overlay's
        database (store.rescore_plain: the same figures to the bit); 0 when it cannot (no math
        functions in this SQLite, a threshold <= 0). The caller's Python pass scores the rest."""
        constants = self._plain_constants()
        if not constants:
            return 0
        return self.store.rescore_plain(as_of, constants, source_ids, due=due, floor=floor, ahead=ahead) or 0

    def _rescore_pending(self, source_id: int, as_of: float) -> None:
        """Facts the upsert left unscored (their age depends on overlay state)."""
        with self.store.transaction():
            self._score_pages(self.store.due_pages(0.0, [source_id]), as_of,
                              partial(self.next_change_at, now=time.time()), floor=1e-3)

    def _score_pages(self, pages, as_of: float, next_change, floor: float | None = None) -> int:
        """Score each page of stored facts (the store's SCORE_INPUTS) at `as_of` and hand the
        scores back to the store. `floor`: a due fact's next_change is at least this, so it
        leaves the due range and one call never loops on a fact."""
        n = 0
        score_row = self.score_row
        for page in pages:
            updates = []
            append = updates.append
            for r in page:
                s = score_row(r, as_of)
                nxt = next_change(as_of, s)
                if floor is not None and nxt is not None and nxt < floor:
                    nxt = floor
                append(ScoreUpdate(s.freshness, s.label, s.age_days, s.days_left, s.days_until_expired,
                                   s.expired_by, s.confidence, as_of, nxt, r["id"]))
            n += self.store.write_scores(updates)
        return n

    # -- sync -----------------------------------------------------------------------------
    def sync(self, source: SourceConfig, as_of: float | None = None, full: bool = True,
             connector: Connector | None = None,
             on_progress: Callable[[int], None] | None = None, now: float | None = None) -> SyncStats:
        """Read `source` (all of it when `full`, else from the stored cursor) into the overlay.

        `full=False` never marks facts deleted: records it does not read are simply unchanged.
        `now`: the clock the sync stamps (first_seen, last_seen; time.time() by default).
        """
        started = time.monotonic()
        now = time.time() if now is None else now
        as_of = now if as_of is None else as_of
        own = connector is None
        connector = connector or make_connector(source)
        stats = SyncStats(source.name, full=full)
        if own:
            connector.open()
        warned = len(connector.warnings)
        load = snapshot = fast = None
        try:
            store = self.store
            fingerprint = self.fingerprint(source) if full else None
            # (a plain SQLite table's full read, outside the transaction: None for any other source)
            spec = _compare_spec(connector) if full else None
            # a full read is not read at all when the source's files are as the last full
            # sync found them (source_snapshot.py)
            snapshot = self._snapshot(source, connector, spec, fingerprint) if full else None
            if spec is not None:
                # compared in SQL first (_set_compare); a first one staged in SQL
                fast = self._set_compare(source, connector, spec, fingerprint, snapshot)
                load = self._stage_load(source, connector, spec) if fast is None else None
                if load is not None:
                    self._start_walkers(load.staged.rows)
            elif snapshot is not None:
                fast = self._snapshot_answer(source, connector, snapshot, fingerprint)
            guard = self.guard(store, source.name) if self.guard else contextlib.nullcontext()
            with store.transaction(), guard:
                before = store.source_row(source.name)
                # A full read with the same configuration as the last full sync compares each
                # record with its stored fact and writes only what changed (unchanged facts keep
                # their row, scores and schedule; the audit's rescore moves them to `as_of`).
                compare = full and _made_with(before, fingerprint)
                if fast is not None and not (compare and self._unchanged_since(fast, before)):
                    fast = None      # another connection committed since: compare record by record
                    store.end_unchanged()
                # another connection committed since the staging: the Record path (finally drops it)
                staged = load if load is not None and store.data_version() == load.version else None
                found = fast.found if fast is not None else None
                whole = found is not None and found.whole   # every non-deleted fact matched: none unseen
                source_id = store.ensure_source(source.name, source.connector, source.target,
                                                source.preset)
                sync_no = store.begin_sync(source_id)
                cursor = None if full else store.cursor_of(source_id)
                rows_before = connector.rows_read
                # (compare: the ids of unchanged facts are kept, and noted in mw_seen only when
                # the read turns out to need the deletion mark: _SeenUnchanged)
                seen = _SeenUnchanged(store, noting=fast is not None) if compare else None
                if staged is not None:   # every row staged: nothing is read again
                    connector.count_rows_read(staged.staged.rows)
                    connector.cursor = staged.cursor
                    touched, live_delta, replaced = self._load_staged(staged, source.name, source_id, sync_no, now,
                                                                      as_of, stats, on_progress)
                else:
                    if fast is None:
                        records = connector.read_for_compare(cursor) if compare else connector.read(cursor)
                    else:                # only the rows the comparison did not find unchanged
                        records = connector.records_at(found.redo) if found.redo else ()
                        connector.count_rows_read(found.rows)
                        connector.cursor = fast.cursor
                        connector.warnings.extend(fast.warnings)
                        stats.records = found.matched
                    touched, live_delta, replaced = self._ingest(
                        records, source_id, sync_no, now, as_of, stats,
                        track=not full, on_progress=on_progress, bulk=full, compare=compare,
                        seen_kept=fast is not None, seen=seen)
                if on_progress:
                    on_progress(stats.records, phase="scoring and detecting contradictions")
                # A connector may answer an incremental read with everything (a rewritten
                # JSON file): then it is a full read after all.
                read_all = full or getattr(connector, "read_all", False)
                gone: list[int] = []
                # every non-deleted fact seen unchanged and nothing written: none is unseen
                all_seen = seen is not None and seen.settle(source_id)
                # (a staged load found the source without facts and wrote every one it has now:
                # none is unseen)
                if read_all and not whole and not all_seen and staged is None:
                    # (the comparison accounted for every row: only the facts that differed can be unseen)
                    among = found.suspects if found is not None else None
                    if self.detector is not None or self.detector_factory is not None:
                        # their subjects' blocks are walked again
                        gone = store.unseen_live_ids(source_id, sync_no, noted=compare, among=among)
                    stats.deleted = store.mark_unseen_deleted(
                        source_id, sync_no, before["last_full_sync"] if before is not None else None,
                        noted=compare, among=among)
                if compare:
                    store.end_unchanged()
                self._rescore_pending(source_id, as_of)
                stats.changed, live_changed = store.count_changed_live(source_id, sync_no)
                stats.contradictions = self._contradictions(source_id, sync_no, replaced, now, stats,
                                                            None if read_all else touched, gone,
                                                            space=self.subject_space(source, source_id),
                                                            live_changed=live_changed,
                                                            on_progress=on_progress)
                stats.rows_read = connector.rows_read - rows_before
                if whole:
                    # every non-deleted fact was matched active and nothing was written: the live
                    # count is the match count, or the snapshot's (no recount of the source's facts)
                    live_delta = (found.matched if fast.live is None else fast.live) - before["rows_seen"]
                store.finish_sync(source_id, sync_no, connector.cursor, stats.rows_read,
                                  stats.changed + stats.deleted, now, full=full,
                                  config_hash=fingerprint,
                                  rows_seen_delta=live_delta if not read_all or whole else None)
            store.refresh_statistics(stats.changed + stats.deleted)
            if snapshot is not None and not (fast is not None and fast.snapshot):
                self._record_snapshot(snapshot, source_id, stats, None if spec is not None else connector,
                                      connector.warnings[warned:])
        finally:
            if load is not None:     # (a rollback after the load would keep its TEMP tables)
                store.drop_staged()
            self._stop_walkers()
            if own:
                connector.close()
        stats.warnings = connector.warnings[warned:]
        unknown = self.categorizer.take_unknown()
        if unknown:
            stats.warnings.append(unknown_categories_warning(unknown))
        truncated = self.categorizer.take_truncated()
        if truncated:
            stats.warnings.append(truncated)
        stats.seconds = time.monotonic() - started
        return stats

    def sync_deletions(self, source: SourceConfig, connector: Connector | None = None,
                       as_of: float | None = None) -> SyncStats:
        """The deletion pass: read the source's keys only and compare them with the overlay.

        Live facts whose key is gone become `deleted` (kept, not erased); keys the overlay
        lacks (rows an incremental read could not see, e.g. a reused rowid) are fetched and
        synced. One transaction; the cursor is left alone.
        """
        started = time.monotonic()
        now = time.time()
        as_of = now if as_of is None else as_of
        store = self.store
        row = store.source_row(source.name)
        if row is None or row["sync_count"] == 0:
            return self.sync(source, as_of=as_of, full=True, connector=connector)
        own = connector is None
        connector = connector or make_connector(source)
        stats = SyncStats(source.name)
        if own:
            connector.open()
        warned = len(connector.warnings)
        try:
            guard = self.guard(store, source.name) if self.guard else contextlib.nullcontext()
            with store.transaction(), guard:
                source_id = row["id"]
                keys_before, rows_before = connector.keys_read, connector.rows_read
                store.load_source_keys(pk_json(pk) for pk in connector.keys())
                stats.keys_read = connector.keys_read - keys_before
                deleted = store.mark_missing_keys_deleted(source_id)
                stats.deleted = len(deleted)
                missing = store.keys_not_in_overlay(source_id)
                stats.missing = len(missing)
                touched: list[int] = []
                replaced: list = []
                sync_no = store.begin_sync(source_id)
                if missing:
                    fetched = _Counted(connector.fetch(json.loads(m) for m in missing))
                    touched, _, replaced = self._ingest(fetched, source_id, sync_no, now, as_of, stats, track=True)
                    # true misses only: keys of rows that give no record (an empty text) are
                    # "missing" on every pass and are not news
                    stats.missing = fetched.count
                    self._rescore_pending(source_id, as_of)
                    stats.changed = store.count_changed(source_id, sync_no)
                    store.set_sync_count(source_id, sync_no)
                stats.contradictions = self._contradictions(source_id, sync_no, replaced, now, stats,
                                                            touched + deleted, deleted,
                                                            space=self.subject_space(source, source_id))
                stats.rows_read = connector.rows_read - rows_before
                store.finish_deletion_scan(source_id, stats.keys_read, now)
                if stats.deleted or stats.changed:
                    store.mark_source_changed(source_id, now)
        finally:
            store.drop_source_keys()
            if own:
                connector.close()
        stats.warnings = connector.warnings[warned:]
        stats.seconds = time.monotonic() - started
        return stats

    def _ingest(self, records, source_id: int, sync_no: int, now: float, as_of: float, stats: SyncStats,
                track: bool, on_progress: Callable[[int], None] | None = None, bulk: bool = False,
                compare: bool = False, seen_kept: bool = False, seen: "_SeenUnchanged | None" = None):
        """Upsert records in batches. With `track`, also return the touched fact ids and the
        change in live facts (index lookups per batch: O(batch), never a recount). With
        `bulk`, a large load drops the read-only indexes and rebuilds them at the end. With
        `compare` (a full read, configuration unchanged), each page of records is compared
        with the stored facts first (`_unchanged`): an unchanged record costs no write, only
        its id handed to `seen` (noted in mw_seen for the deletion mark; `seen_kept`: the ids
        the set comparison noted there stay). A plain row given as a tuple
        (Connector.read_for_compare) is compared as it is and becomes a Record only when it
        differs from its fact (_plain_unchanged: never unchanged where the Record would not be)."""
        store = self.store
        touched: list[int] = []
        live_delta = 0
        replaced: list[tuple[str, str, str]] = []
        page: list[Record] = []
        dropped: list[str] | None = None
        written = 0
        fact_row = self._row_builder(source_id, sync_no, now, as_of)
        page_rows = self._page_builder(source_id, sync_no, now, as_of)
        unchanged = self._unchanged_test() if compare else None
        if compare and not seen_kept:      # (seen_kept: the set comparison's mw_seen is filled)
            store.begin_unchanged()
        if compare and seen is None:
            seen = _SeenUnchanged(store, noting=True)
        pk_prefixes: dict[str, str] = {}
        fresh = bulk and store.max_fact_id() == 0

        def write(batch: list[FactRow]) -> None:
            nonlocal dropped, written
            written += len(batch)
            if bulk and dropped is None:
                dropped = self._bulk_drop(written, fresh)
            if batch:
                store.upsert_facts(batch)

        # A load that only writes (no lookups between pages) into a Postgres overlay hands its
        # pages to a writer thread: the COPY waits for the server without the GIL while this
        # thread builds the next page (WRITER_THREAD_DIALECTS).
        threaded = bulk and not track and not compare and store.dialect in WRITER_THREAD_DIALECTS
        writer = _PageWriter(write) if threaded else None
        submit = writer.submit if writer is not None else write

        def flush():
            nonlocal live_delta
            batch: list[FactRow] = []
            if unchanged is not None:
                pks = []
                for rec in page:
                    if rec.__class__ is tuple:      # a plain row (PLAIN_FIELDS): pk_json() of its one key
                        prefix = pk_prefixes.get(rec[0])
                        if prefix is None:
                            prefix = pk_prefixes[rec[0]] = "{" + _enc(rec[0]) + ": "
                        pks.append(prefix + _enc(rec[1]) + "}")
                    else:
                        pks.append(pk_json(rec.pk))
                records, pks = _last_of_each(page, pks)
                stored = store.stored_for_compare(source_id, pks)
                ids: list[int] = []
                dead = False
                plain = 0
                for rec, pk in zip(records, pks):
                    old = stored.get(pk)
                    if rec.__class__ is tuple:
                        if old is not None and _plain_unchanged(rec, old):
                            ids.append(old[0])
                            plain += 1
                            continue
                        rec = rec[12](rec[11])      # its Record (tabular.tuple_plain's `record`)
                    if old is not None and unchanged(rec, old):
                        ids.append(old[0])
                        dead = dead or old[12] == "deleted"
                    else:
                        batch.append(fact_row(rec, pk))
                stats.plain_unchanged += plain
                seen.add(ids, wrote=bool(batch) or dead)
            else:
                batch = page_rows(page)
            if track:
                pks = list(dict.fromkeys(row.pk for row in batch))
                before = store.live_count_of(source_id, pks)
            submit(batch)
            if track:
                live_delta += store.live_count_of(source_id, pks) - before
                touched.extend(store.ids_of(source_id, pks))
            stats.records += len(page)
            page.clear()
            if on_progress:
                on_progress(stats.records)

        try:
            for rec in records:
                page.append(rec)
                if rec.__class__ is not tuple and rec.replaced_by:
                    replaced.append((rec.ref, make_ref(rec.source, rec.table, rec.replaced_by),
                                     rec.replaced_note or "the source marks it replaced"))
                if len(page) >= BATCH:
                    flush()
            if page:
                flush()
        except BaseException:
            if writer is not None:
                writer.close(cancel=True)
            raise
        if writer is not None:
            writer.close()
        if dropped:
            store.create_indexes(dropped)
        return touched, live_delta, replaced

    def _snapshot(self, source: SourceConfig, connector: Connector, spec, fingerprint: str | None) -> Snapshot | None:
        """The source files' snapshot before a full read (overlay/engine/source_snapshot.py)
        of the plain SQLite table `spec`, or (spec None) of whatever the connector reads from
        files, into an overlay (SQLite or Postgres) outside a transaction; None otherwise or
        when the files are too large to hash."""
        store = self.store
        if not SNAPSHOTS or store.in_transaction():
            return None
        paths = [spec.path] if spec is not None else connector.snapshot_files()
        if not paths:
            return None
        key = snapshot_key(source.name)
        recorded = store.get_meta(key)
        any_size = spec is None and connector.reads_whole_files
        if spec is not None:
            mapping = plain_mapping(spec, fingerprint)
            bound = 0 if recorded else connector.largest_rowid() or 0
        else:
            mapping = connector_mapping(connector, paths, fingerprint)
            bound = 0 if recorded or any_size else connector.rows_bound()
        return Snapshot.take(key, paths, mapping, recorded, bound, any_size)

    def _record_snapshot(self, snapshot: Snapshot, source_id: int, stats: SyncStats,
                         connector: Connector | None = None, warnings: Sequence[str] = ()) -> None:
        """After a full sync (committed): record its snapshot when the files did not change
        while it read them, the records read are the live facts (for a plain table, each
        row read became one) and none is forgotten; else forget any recorded one.
        `connector`: not a plain table's (its cursor and `warnings` are recorded: the answer
        gives them again)."""
        store = self.store
        record = None
        if snapshot.unchanged_since():
            state = store.facts_state(source_id)
            total, _, _, deleted, forgotten = state
            if connector is None:     # a plain table: each row read became one live fact
                one_each = stats.rows_read == stats.records == total - deleted
            else:                     # every live fact is a record's (a record may make a deleted one)
                one_each = total - deleted <= stats.records <= total
            if not forgotten and one_each:
                record = snapshot.record_of(stats.rows_read, stats.records, state,
                                            None if connector is None else connector.cursor or {}, warnings)
        store.set_meta(snapshot.key, record)

    def _snapshot_answer(self, source: SourceConfig, connector: Connector, snapshot: Snapshot,
                         fingerprint: str | None) -> "_SetCompare | None":
        """A full read of a preset or JSON source answered by its recorded snapshot when the
        files and the facts are as that sync left them (its records, cursor and warnings);
        None: read it."""
        store = self.store
        before = store.source_row(source.name)
        recorded = snapshot.recorded
        # (what `meta` holds is checked for shape: an overlay edited by hand reads again)
        if (not _made_with(before, fingerprint) or recorded is None or not isinstance(recorded.get("cursor"), dict)
                or not isinstance(recorded.get("warnings", []), list)
                or not snapshot.matches(store.facts_state(before["id"]))):
            return None
        warnings = tuple(w for w in recorded.get("warnings", []) if isinstance(w, str))
        return self._answered(snapshot, connector.unchanged_cursor(recorded["cursor"]), warnings)

    def _answered(self, snapshot: Snapshot, cursor: dict, warnings: tuple[str, ...] = ()) -> "_SetCompare":
        """The full read a matching snapshot stands for: the recorded sync's rows are every
        row, each its fact unchanged (`whole`)."""
        store = self.store
        store.begin_unchanged()
        recorded = snapshot.recorded
        found = SetComparison(recorded["rows"], recorded["records"], [], True)
        # (SQLite tells whether another connection committed since; Postgres does not)
        version = store.data_version() if store.dialect == "sqlite" else recorded["facts"]
        total, _, _, deleted, _ = recorded["facts"]
        return _SetCompare(version, cursor, found, True, warnings, total - deleted)

    def _set_compare(self, source: SourceConfig, connector: Connector, spec, fingerprint: str | None,
                     snapshot: Snapshot | None = None) -> "_SetCompare | None":
        """A full read of the SQLite table `spec` whose facts were made with this configuration,
        done as a set comparison in SQL (overlay/store/compare.py): the unchanged rows' facts
        are noted in mw_seen and never become Records; the other rows are returned by rowid
        for the Record path. Run before the sync's transaction (no lock on the source outlives
        a page); None when the overlay does not allow it. Answered by `snapshot` when it
        matches (nothing compared).

        The cursor a full read would leave is taken first (its mark before the rows, as
        read() takes it)."""
        store = self.store
        if snapshot is None and not store.can_compare_in_sql():
            return None
        before = store.source_row(source.name)
        if not _made_with(before, fingerprint):
            return None
        if snapshot is not None and snapshot.matches(store.facts_state(before["id"])):
            # the files and the facts are as the recorded full sync left them
            return self._answered(snapshot, connector.full_read_cursor())
        if not store.can_compare_in_sql():
            return None
        version = store.data_version()
        cursor = connector.full_read_cursor()
        found = store.compare_source(before["id"], spec, pause=connector.pace)
        if found is None:
            store.end_unchanged()
            return None
        return _SetCompare(version, cursor, found)

    def _unchanged_since(self, fast: "_SetCompare", before) -> bool:
        """Inside the sync's transaction: whether the overlay is as `fast` found it (no other
        connection committed since: SQLite's data_version; for a snapshot on Postgres, the
        source's facts as the snapshot recorded them)."""
        if isinstance(fast.version, list):
            return self.store.facts_state(before["id"]) == fast.version
        return self.store.data_version() == fast.version

    def _stage_load(self, source: SourceConfig, connector: Connector, spec) -> "_Load | None":
        """A first full read of the plain SQLite table `spec` (the set comparison's case) into
        a SQLite overlay holding no fact of the source yet: the table copied into TEMP before
        the sync's transaction (overlay/store/bulk_load.py), for `_load_staged` to insert in
        SQL. None when the table or the overlay does not allow it.

        The cursor a full read would leave is taken first (its mark before the rows, as
        read() takes it)."""
        store = self.store
        if not SQL_LOAD or len(spec.pk) != 1 or not store.can_compare_in_sql():
            return None
        before = store.source_row(source.name)
        if before is not None and store.holds_facts(before["id"]):
            return None
        version = store.data_version()
        cursor = connector.full_read_cursor()
        staged = store.stage_source(spec, source.target, pause=connector.pace, min_rows=SQL_LOAD_MIN)
        if staged is None:
            return None
        return _Load(version, cursor, staged, connector.row_records(), spec.table_name)

    def _load_staged(self, load: "_Load", source_name: str, source_id: int, sync_no: int, now: float,
                     as_of: float, stats: SyncStats, on_progress: Callable | None):
        """Insert what _stage_load staged, a page at a time: each row's times, category and
        content hash computed here (`_staged_facts`), its scores by SQL for the categories
        SQL scores (store.score_staged) and by plain_scorer for the others, and the page
        inserted by one INSERT … SELECT of the staged rows joined with them
        (store.insert_staged), in a second thread while the next page is computed; the rows
        that computation leaves go through `_page_builder` (or fact_row, when already
        categorised) from the staged values and are upserted among them in rowid order (the
        ids the Record path gives). The indexes `_ingest` drops for a
        bulk load are dropped and rebuilt the same way. Returns _ingest's (touched,
        live_delta, replaced) of a full read."""
        store = self.store
        staged = load.staged
        fact_row = self._row_builder(source_id, sync_no, now, as_of)
        page_rows = self._page_builder(source_id, sync_no, now, as_of)
        dropped = self._bulk_drop(staged.rows, store.max_fact_id() == 0) or []
        in_sql = store.begin_staged_insert(source_id, load.table, f"{source_name}:{load.table}:", now, sync_no, as_of,
                                           self._plain_constants())
        facts_of = self._staged_facts(source_name, now, as_of, in_sql)
        ahead = as_of > now + 1.0
        record = load.record
        replaced: list[tuple[str, str, str]] = []

        def bind(after: int, upto: int, computed: list, unscored: tuple[list, ...],
                 made: dict) -> tuple[int, int, tuple[list, ...]]:
            store.stage_values(computed, unscored, [(rid, *row) for rid, row in made.items()])
            return after, upto, unscored

        def write(after: int, upto: int, unscored: tuple[list, ...]) -> None:
            left = store.score_staged()
            if left:        # a rounding tie or a great age: plain_scorer in Python
                store.set_staged_scores([(rid, *_plain_scores(self._plain_scorer(category), as_of, now, ahead,
                                                              created, updated, True))
                                         for rid, category, created, updated in _unscored_rows(unscored, left)])
            store.insert_staged(after, upto)

        # A page's SQL (its scores, its INSERT … SELECT: a few long statements, during which
        # SQLite releases the GIL) runs in `writer` while the next page is computed here. Its
        # values are bound here first: binding row by row in the writer would take the GIL
        # back from this thread for every row. Every read here drains the writer first.
        writer = _PageWriter(lambda page: write(*page))
        ready: tuple | None = None          # the last page computed, not yet handed to the writer
        try:
            for after, upto in staged.pages:
                writer.drain()
                rows = store.staged_page(after, upto)
                if ready is not None:
                    writer.submit(bind(*ready))
                computed, unscored, python = facts_of(rows)
                made: dict[int, FactRow] = {}
                if python:
                    writer.drain()
                    made = self._staged_records(store.staged_rows(sorted(python)), python, record, fact_row,
                                                page_rows, replaced)
                ready = (after, upto, computed, unscored, made)
                stats.records += len(computed) + sum(map(len, unscored)) + len(made)
                if on_progress:
                    on_progress(stats.records)
            writer.drain()
            if ready is not None:
                writer.submit(bind(*ready))
        except BaseException:
            writer.close(cancel=True)       # the write in flight ends before the transaction does
            raise
        writer.close()
        store.drop_staged()
        if dropped:
            store.create_indexes(dropped)
        return [], 0, replaced

    @staticmethod
    def _staged_records(rows: list[tuple], python: dict, record: Callable, fact_row: Callable, page_rows: Callable,
                        replaced: list) -> dict[int, FactRow]:
        """{rowid: FactRow} of the staged `rows` (staged_rows()) a page left to the Record path
        (`python`: rowid -> category, None when not categorised yet); a record the source
        marks replaced is noted in `replaced`."""
        plain, categorised = [], []
        for row in rows:
            rec = record(row)
            if rec is None:
                continue
            category = python[row[-1]]
            (plain if category is None else categorised).append((row[-1], rec, category))
            if rec.replaced_by:
                replaced.append((rec.ref, make_ref(rec.source, rec.table, rec.replaced_by),
                                 rec.replaced_note or "the source marks it replaced"))
        made = dict(zip([rid for rid, _, _ in plain], page_rows([rec for _, rec, _ in plain])))
        made.update((rid, fact_row(rec, None, category)) for rid, rec, category in categorised)
        return made

    def _start_walkers(self, rows: int) -> None:
        """Before a first load of `rows` rows with detection on: the detection's worker
        processes, if it will have any, started now (each imports the package and builds its
        detector, about half a second), while the load's two threads leave a core partly
        idle; detect_changed would start them only once the load is done."""
        if self.detector is None and self.detector_factory is None:
            return
        from memwatch_overlay.overlay.detect import parallel
        if self.detector is None:
            self.detector, self.detector_factory = self.detector_factory(), None
        workers = parallel.workers_for(self.detector, rows, getattr(self.detector, "workers", None))
        if workers > 1:
            self._walkers = parallel.ParallelWalks(self.detector, workers)
            self._walkers.start()

    def _stop_walkers(self, wait: bool = True) -> None:
        if self._walkers is not None:
            walkers, self._walkers = self._walkers, None
            walkers.close(wait)

    def _bulk_drop(self, rows: int, fresh: bool) -> list[str] | None:
        """The indexes a bulk load of `rows` facts drops now, as the SQL that rebuilds them:
        FRESH_INDEXES into an overlay holding no fact yet (`fresh`), BULK_INDEXES for BULK_MIN
        facts or more that are a quarter of the overlay; None: not (yet)."""
        store = self.store
        if fresh:
            return store.drop_bulk_indexes(store.FRESH_INDEXES)
        if rows >= BULK_MIN and rows * 4 >= store.max_fact_id():
            return store.drop_bulk_indexes()
        return None

    def _plain_constants(self) -> dict:
        """The configured categories' PlainConstants (those without `ttl_days`), when every
        threshold is > 0 (else none: the SQL scoring needs them): what store.rescore_plain and
        a staged load's SQL scoring take."""
        cfg = self.config
        th = cfg.thresholds
        if not (th.fresh > 0 and th.aging > 0 and th.stale > 0):
            return {}
        constants = {}
        for name, policy in cfg.categories.items():
            c = plain_constants(policy, th, cfg.lifecycle)
            if c is not None:
                constants[name] = c
        return constants

    def _plain_scorer(self, category: str):
        """plain_scorer of a category (None: it has `ttl_days`), made once per engine: the
        page builders look it up in `_plain_scorers` first."""
        scorer = self._plain_scorers.get(category, _MISSING)
        if scorer is _MISSING:
            cfg = self.config
            scorer = self._plain_scorers[category] = plain_scorer(cfg.policy(category), cfg.thresholds, cfg.lifecycle)
        return scorer

    def _staged_facts(self, source_name: str, now: float, as_of: float,
                      in_sql: frozenset[str] = frozenset()) -> Callable[[list], tuple]:
        """facts_of(rows) for the staged rows (rowid, ok, text, subject, key, category,
        created_at, updated_at as the source holds them) of one page: ([(rowid, *bulk_load.BOUND)],
        the rows whose scores the store computes (a category of `in_sql`: store.score_staged) as
        store.stage_values takes them (three lists: (rowid, category, content_hash), + created_at,
        + updated_at; a row's trailing times that are NULL are left out, since sqlite3 binds a
        None at several times a float's cost), {rowid: category or None} of the rows left to
        the Record path). The values are those `_page_builder` gives the row's Record, to the
        bit: the times as the connector's tuple path parses them, the page categorised in one
        call, plain_scorer's scores, the content hash inline. A row is left when SQL does not
        copy it exactly (`ok` false), a time is not one the tuple path parses itself, or its
        category is not scored by plain_scorer (then with its category: it is not categorised
        twice). A row with a blank text makes no fact, as read() makes no Record of it."""
        categorize_rows = self.categorizer.categorize_rows
        scorers, scorer_of = self._plain_scorers, self._plain_scorer
        ahead = as_of > now + 1.0
        digest_of = content_digest
        epoch = naive_iso_epoch          # the times as the connector's tuple path parses them

        def facts_of(rows: list[tuple]) -> tuple[list[tuple], tuple[list[tuple], ...], dict]:
            computed: list[tuple] = []
            unscored: tuple[list[tuple], ...] = ([], [], [])     # bound with no time, created_at, both
            undated, created_only, later = (rows.append for rows in unscored)
            python: dict[int, str | None] = {}
            ready = []
            keep = ready.append
            for rid, ok, text, subject, key, given, created, updated in rows:
                if not ok:
                    python[rid] = None
                    continue
                if created is not None:
                    created = epoch(created)
                    if created is None:
                        python[rid] = None
                        continue
                if updated is not None:
                    updated = epoch(updated)
                    if updated is None:
                        python[rid] = None
                        continue
                if text.strip():
                    keep((rid, text, subject or None, key or None, given or None, created, updated))
            categories = categorize_rows([(source_name, r[3], r[1], r[4]) for r in ready])
            append = computed.append
            for (rid, text, subject, key, _, created, updated), category in zip(ready, categories):
                if category in in_sql:
                    digest = digest_of(text, key, subject, category, created, updated, None, "active")
                    if updated is not None:
                        later((rid, category, digest, created, updated))
                    elif created is not None:
                        created_only((rid, category, digest, created))
                    else:
                        undated((rid, category, digest))
                    continue
                scorer = scorers.get(category, _MISSING)
                if scorer is _MISSING:
                    scorer = scorer_of(category)
                if scorer is None:
                    python[rid] = category
                    continue
                freshness, label, age, left, until, confidence, nxt = _plain_scores(
                    scorer, as_of, now, ahead, created, updated, True)
                digest = digest_of(text, key, subject, category, created, updated, None, "active")
                append((rid, category, digest, created, updated, freshness, label, age, left, until, confidence,
                        nxt))
            return computed, unscored, python

        return facts_of

    def _unchanged_test(self) -> Callable[[Record, tuple], bool]:
        """unchanged(rec, stored) -> True when upserting `rec` would leave its stored fact
        (a tuple of the store's UNCHANGED_COLUMNS) as it is, apart from what a sync stamps
        (seen_sync, last_seen) and what the sync recomputes anyway (contradicted status, scores
        at a new as_of). Only valid when the configuration is the one the facts were
        categorised and scored with (the source's fingerprint): a record without a category
        of its own then gets the category it got before, provided it had none of its own
        before either: the category the source gave (facts.category_given, NULL for none) is
        compared too, so a category column cleared, set or changed is a change even when the
        text is not (a cleared one falls back to the rules' category)."""
        categorize = self.categorizer.categorize

        def unchanged(rec: Record, old: tuple) -> bool:
            (_, tbl, subject, key, text, category, given, created, updated, accessed, count, expires, status,
             digest) = old
            if not (text == rec.text and key == rec.key and subject == rec.subject and created == rec.created_at
                    and updated == rec.updated_at and expires == rec.expires_at and accessed == rec.accessed_at
                    and count == rec.access_count and tbl == rec.table and given == (rec.category or None)):
                return False
            if rec.category and categorize(rec.source, rec.key, rec.text, rec.category) != category:
                return False
            if status == rec.status:
                return True
            # a forgotten fact stays forgotten, and a contradicted one is judged again, when the
            # record is the one they were stored from (its status is in the content hash)
            return status in ("forgotten", "contradicted") and content_hash_as(rec, category) == digest

        return unchanged

    def _row_builder(self, source_id: int, sync_no: int, now: float, as_of: float) -> Callable[[Record], FactRow]:
        """fact_row(rec) -> the facts row upsert_facts() takes, categorised and scored.

        The per-record hot path of every sync: what is the same for the whole sync (policies,
        thresholds, whether `as_of` is ahead of the clock) is looked up once here. The same
        values as score() and next_change_at() give (tests/test_sync_rows.py)."""
        categorize = self.categorizer.categorize
        cfg = self.config
        thresholds, lifecycle = cfg.thresholds, cfg.lifecycle
        policies: dict[str, CategoryPolicy] = {}
        ahead = as_of > now + 1.0          # next_change_at(): due again at once
        new_row = tuple.__new__

        def fact_row(rec: Record, pk_text: str | None = None, category: str | None = None) -> FactRow:
            # `category`: the one categorize() gave this record already (page_rows)
            given = rec.category or None        # what the source gave (facts.category_given)
            if category is None:
                category = categorize(rec.source, rec.key, rec.text, given)
            rec.category = category
            policy = policies.get(category)
            if policy is None:
                policy = policies[category] = cfg.policy(category)
            created, updated = rec.created_at, rec.updated_at
            learned = _latest(created, updated)      # Record.learned_at
            pk, status = rec.pk, rec.status
            freshness, label, age, left, until, expired_by, confidence, change_days = score_fact(
                as_of, now if learned is None else learned, policy, thresholds, rec.access_count,
                rec.accessed_at, rec.expires_at, lifecycle=lifecycle)
            if change_days is None or status not in LIVE_STATUSES:
                nxt = None
            else:
                nxt = 0.0 if ahead else as_of + change_days * DAY
            # FactRow's fields in order, without keyword arguments (a third of this function's
            # cost); a field added to FactRow fails the upsert's binding count and test_sync_rows
            return new_row(FactRow, (
                source_id, rec.table, pk_text or pk_json(pk), make_ref(rec.source, rec.table, pk),   # ..ref
                rec.subject, rec.key, rec.text, category, given, created, updated,    # subject..updated_at
                rec.accessed_at, rec.access_count, rec.expires_at, content_hash(rec), now, now,  # ..last_seen
                sync_no, sync_no, status, freshness, label, age, left, until,    # seen_sync..days_until_expired
                expired_by, as_of, confidence, nxt))                             # expired_by..next_change

        return fact_row

    def _page_builder(self, source_id: int, sync_no: int, now: float, as_of: float) -> Callable[[list], list]:
        """page_rows(records) -> [fact_row(rec) for rec in records] (_row_builder's rows, to
        the bit: tests/test_sync_rows.py), a page at a time: the page is categorised in one
        call, and the usual record (never accessed, no expiry of its own, a one-part string
        key, a category without ttl_days) is scored by its category's plain_scorer (the
        per-category constants worked out once), its key's JSON text and its ref built from
        prefixes made once, its content hash inline. Any other record goes through fact_row."""
        fact_row = self._row_builder(source_id, sync_no, now, as_of)
        categorize_page = self.categorizer.categorize_page
        scorers, scorer_of = self._plain_scorers, self._plain_scorer
        ref_prefixes: dict[tuple[str, str], str] = {}
        pk_prefixes: dict[str, str] = {}
        ahead = as_of > now + 1.0
        new_row, digest_of, enc, live = tuple.__new__, content_digest, _enc, LIVE_STATUSES

        def page_rows(records: list[Record]) -> list[FactRow]:
            rows: list[FactRow] = []
            append = rows.append
            for rec, category in zip(records, categorize_page(records)):
                scorer = scorers.get(category, _MISSING)
                if scorer is _MISSING:
                    scorer = scorer_of(category)
                pk = rec.pk
                if (scorer is None or rec.access_count or rec.accessed_at is not None
                        or rec.expires_at is not None or len(pk) != 1):
                    append(fact_row(rec, None, category))
                    continue
                (name, value), = pk.items()
                if value.__class__ is not str or name.__class__ is not str:
                    append(fact_row(rec, None, category))
                    continue
                given, rec.category = rec.category or None, category
                source, table = rec.source, rec.table
                prefix = ref_prefixes.get((source, table))
                if prefix is None:
                    prefix = ref_prefixes[(source, table)] = ":".join([source, table, ""])
                pk_prefix = pk_prefixes.get(name)
                if pk_prefix is None:
                    pk_prefix = pk_prefixes[name] = "{" + enc(name) + ": "
                created, updated, text, key, subject, status = (rec.created_at, rec.updated_at, rec.text, rec.key,
                                                                rec.subject, rec.status)
                freshness, label, age, left, until, confidence, nxt = _plain_scores(
                    scorer, as_of, now, ahead, created, updated, status in live)
                digest = digest_of(text, key, subject, category, created, updated, None, status)
                append(new_row(FactRow, (
                    source_id, table, pk_prefix + enc(value) + "}", prefix + value,   # ..ref
                    subject, key, text, category, given, created, updated,          # subject..updated_at
                    None, rec.access_count, None, digest, now, now,                  # accessed_at..last_seen
                    sync_no, sync_no, status, freshness, label, age, left, until,    # seen_sync..days_until_expired
                    None, as_of, confidence, nxt)))                                  # expired_by..next_change
            return rows

        return page_rows

    def subject_space(self, source: SourceConfig, source_id: int) -> list[int]:
        """Ids of the sources whose facts share subjects with this one: the source itself,
        and the config's sources naming the same `subject_space` (facts of two stores are
        never compared otherwise: "u1" in one store need not be "u1" in another)."""
        ids = [source_id]
        if not source.subject_space:
            return ids
        for s in self.config.sources:
            if s.subject_space == source.subject_space and s.name != source.name:
                other = self.store.source_row(s.name)
                if other is not None:
                    ids.append(other["id"])
        return ids

    def _contradictions(self, source_id: int, sync_no: int, replaced, now: float, stats: SyncStats,
                        touched: list[int] | None = None, deleted: list[int] | tuple = (),
                        space: list[int] | None = None, live_changed: int | None = None,
                        on_progress: Callable | None = None) -> int:
        """Judge changed facts again. `touched` (incremental) limits the status update to the
        facts this sync wrote or deleted and the facts they contradict; None recomputes all.
        `deleted`: facts this sync found deleted (their blocks are walked again); `space`:
        the sources sharing this one's subjects (`subject_space`); `live_changed`: the live
        facts this sync changed, when counted already (store.count_changed_live);
        `on_progress`: the sync's, told how far the walk of the changed facts' blocks has come
        (phase DETECT_PHASE, `of` the live changed facts)."""
        store = self.store
        had_any = store.has_contradictions()
        # the changed facts' ids are read only where they are used: a full read into an overlay
        # holding no contradiction (every first audit) needs none (100k ids: 0.03 s CPU)
        changed = store.changed_ids(source_id, sync_no) if had_any or touched is not None else []
        partners = store.older_partners(changed) if touched is not None and had_any else set()
        if had_any:
            store.clear_contradictions_of(changed)
        found = 0
        for older_ref, newer_ref, note in replaced:
            older, newer = store.fact_id(older_ref), store.fact_id(newer_ref)
            if older is not None and newer is not None:      # (counted when new, as the detector's are)
                found += store.add_contradiction(older, newer, "value", 1.0, note, None, now)
        if live_changed is None and (self.detector is not None or self.detector_factory is not None):
            live_changed = store.count_changed(source_id, sync_no, live_only=True)
        if self.detector is None and self.detector_factory is not None and (deleted or live_changed):
            self.detector, self.detector_factory = self.detector_factory(), None
        affected: set[int] = set()
        # a full recompute with nothing contradicted yet (a first audit): the detector marks
        # each older fact as it stores the edge, and no pass over every fact is needed
        marked = False
        if self.detector is not None:
            from memwatch_overlay.overlay.detect.blocks import detect_changed
            marked = touched is None and not store.has_contradictions() and not store.has_contradicted_status()
            progress = (None if on_progress is None else
                        lambda done, total: on_progress(done, phase=DETECT_PHASE, of=total))
            found += detect_changed(store, self.detector, source_id, sync_no, now, stats,
                                    space=space, also=deleted,
                                    affected=affected, mark_status=marked, live_changed=live_changed,
                                    walkers=self._walkers, progress=progress)
            self._stop_walkers(wait=False)      # every walk is back
        if touched is not None:
            ids = set(touched) | set(changed) | partners | affected
            store.apply_contradiction_status(fact_ids=sorted(ids | store.older_partners(ids)))
        elif marked:
            pass                    # the detector left every status exact
        elif store.has_contradictions():
            store.apply_contradiction_status()
        else:       # nothing contradicts anything: only stale flags need clearing (no rewrite of every fact)
            store.clear_contradicted_status()
        return found


class _SetCompare(NamedTuple):
    """What SyncEngine._set_compare found: the overlay's data_version it compared against,
    the cursor a full read would leave, and the comparison (compare.py's SetComparison)."""

    version: int | list     # the overlay's data_version; for a snapshot on Postgres, the facts_state it recorded
    cursor: dict
    found: SetComparison
    snapshot: bool = False     # answered by the recorded snapshot (nothing compared)
    warnings: tuple[str, ...] = ()   # the recorded read's warnings, given again
    live: int | None = None          # the source's live facts, when not `found.matched` (a snapshot's)


class _Load(NamedTuple):
    """What SyncEngine._stage_load staged: the overlay's data_version it staged against, the
    cursor a full read would leave, the staged pages (bulk_load.Staged), the connector's
    record(row) for the rows left to the Record path, and the Records' `table`."""

    version: int
    cursor: dict
    staged: Staged
    record: Callable
    table: str


def _compare_spec(connector: Connector):
    """The connector's CompareSpec (connectors/sqlite.py: a plain SQLite table the overlay may
    read in SQL); None for any other source."""
    spec_of = getattr(connector, "compare_spec", None)
    return spec_of() if spec_of is not None else None


def _made_with(before, fingerprint: str | None) -> bool:
    """Whether a source's stored facts come from a full sync with this configuration (its
    fingerprint): then a full read may compare records with them instead of rewriting."""
    return (before is not None and before["last_full_sync"] is not None
            and before["config_hash"] == fingerprint)


def _plain_unchanged(row: tuple, old: tuple) -> bool:
    """_unchanged_test()'s answer for a plain row (tabular.PLAIN_FIELDS) whose Record would
    have no category of its own and status `active`, against its stored fact (UNCHANGED_COLUMNS):
    the same equalities. False for a fact not `active` (the Record path judges it)."""
    (_, _, table, text, subject, key, created, updated, accessed, count, expires, _, _) = row
    (_, tbl, o_subject, o_key, o_text, _, given, o_created, o_updated, o_accessed, o_count, o_expires, status,
     _) = old
    return (o_text == text and o_key == key and o_subject == subject and o_created == created
            and o_updated == updated and o_expires == expires and o_accessed == accessed and o_count == count
            and tbl == table and given is None and status == "active")


class _SeenUnchanged:
    """The ids of the facts a full read found unchanged (nothing written for them), which the
    deletion mark must not mark (TEMP mw_seen).

    While the read writes nothing, they are kept here (strictly ascending, as a first load's
    ids and the source's rows come, at most PENDING_MAX): a read that changed nothing and saw
    every non-deleted fact of the source notes none and marks nothing (settle(); on a
    Postgres overlay noting 100k ids was a fifth of a same-day re-audit). At the first page
    that wrote, or ids out of order, they are noted, and so is each page after. `noting`:
    from the start (the set comparison's rows)."""

    def __init__(self, store: OverlayStore, noting: bool):
        self.store = store
        self.noting = noting
        self.pending = array("q")
        self.last = 0             # fact ids start at 1

    def add(self, ids: list[int], wrote: bool) -> None:
        """`ids`: a page's unchanged facts; `wrote`: the page wrote a fact (or saw a deleted
        one unchanged): the deletion mark will be needed."""
        if not self.noting:
            if (not wrote and len(self.pending) + len(ids) <= PENDING_MAX
                    and (not ids or (ids[0] > self.last and all(a < b for a, b in zip(ids, ids[1:]))))):
                if ids:
                    self.pending.extend(ids)
                    self.last = ids[-1]
                return
            self._note_pending()
        if ids:
            self.store.note_unchanged(ids)

    def settle(self, source_id: int) -> bool:
        """True when nothing was written and the ids kept are every non-deleted fact of the
        source (none noted: there is nothing to mark deleted); else they are noted now."""
        if self.noting:
            return False
        if len(self.pending) == self.store.count_not_deleted(source_id):
            return True
        self._note_pending()
        return False

    def _note_pending(self) -> None:
        self.noting = True
        for i in range(0, len(self.pending), 50_000):
            self.store.note_unchanged(self.pending[i:i + 50_000].tolist())
        self.pending = array("q")


class _Counted:
    """An iterator that counts what it hands out."""

    def __init__(self, items):
        self._items = iter(items)
        self.count = 0

    def __iter__(self):
        return self

    def __next__(self):
        item = next(self._items)
        self.count += 1
        return item


class _PageWriter:
    """write(page) in a second thread, in submission order, at most two pages behind.

    The sync's transaction is the caller's: the writer only runs statements inside it, and
    close() waits for it, so nothing is written after the caller commits or rolls back. A
    caller that also reads through the connection calls drain() first: the connection is
    then used by one thread at a time. A failed write is raised in the caller (at its next
    submit or drain, or by close)."""

    def __init__(self, write: Callable[[list], None]):
        self.write = write
        self.pages: queue.Queue = queue.Queue(maxsize=2)
        self.error: BaseException | None = None
        self.cancelled = False
        self.thread = threading.Thread(target=self._run, name="memwatch-overlay-writer", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            page = self.pages.get()
            try:
                if page is None:
                    return
                if self.error is not None or self.cancelled:
                    continue
                try:
                    self.write(page)
                except BaseException as exc:   # handed to the caller's thread
                    self.error = exc
            finally:
                self.pages.task_done()

    def submit(self, page) -> None:
        if self.error is not None:
            self._raise()
        self.pages.put(page)

    def drain(self) -> None:
        """Wait until every page submitted is written; raise a failed write."""
        self.pages.join()
        if self.error is not None:
            self._raise()

    def close(self, cancel: bool = False) -> None:
        """Wait for every submitted page (`cancel`: skip those not begun); raise a failed write."""
        self.cancelled = cancel
        self.pages.put(None)
        self.thread.join()
        if self.error is not None and not cancel:
            self._raise()

    def _raise(self) -> None:
        error, self.error = self.error, None
        self.cancelled = True
        raise error


_MISSING = object()     # not looked up yet (a dict.get default None cannot say)


def _plain_scores(scorer, as_of: float, now: float, ahead: bool, created: float | None,
                  updated: float | None, live: bool) -> tuple:
    """(freshness, label, age_days, days_left, days_until_expired, confidence, next_change) of a
    plain fact (plain_scorer's case) learned at its latest time (else `now`), as fact_row
    stores them: no next change for a fact that is not live, at once when `as_of` is ahead."""
    learned = _latest(created, updated)
    freshness, label, age, left, until, _, confidence, change_days = scorer(as_of, now if learned is None else learned)
    if change_days is None or not live:
        nxt = None
    else:
        nxt = 0.0 if ahead else as_of + change_days * DAY
    return freshness, label, age, left, until, confidence, nxt


def _unscored_rows(unscored: tuple[list, ...], rids: list[int]) -> list[tuple]:
    """(rowid, category, created_at, updated_at) of these rowids (ascending) among a page's
    unscored rows as facts_of made them (three lists in rowid order: without times, with
    created_at, with both)."""
    out = []
    for rid in rids:
        for rows in unscored:
            at = bisect_left(rows, (rid,))
            if at < len(rows) and rows[at][0] == rid:
                row = rows[at]
                out.append((rid, row[1], row[3] if len(row) > 3 else None, row[4] if len(row) > 4 else None))
                break
    return out


def _last_of_each(page: list, pks: list[str]) -> tuple[list, list[str]]:
    """The page's records without those a later record of the page shares a key with: a
    read's last record of a key is its fact (as upserting them in turn leaves it), and each
    is compared with the fact stored before the page, not with one an earlier record of the
    page would write."""
    last = {pk: i for i, pk in enumerate(pks)}
    if len(last) == len(pks):         # (the usual page: every key once)
        return page, pks
    keep = sorted(last.values())
    return [page[i] for i in keep], [pks[i] for i in keep]


def _latest(*times: float | None) -> float | None:
    """max() of the times that are not None (None when none is): the moment of learning."""
    latest = None
    for t in times:
        if t is not None and (latest is None or t > latest):
            latest = t
    return latest
