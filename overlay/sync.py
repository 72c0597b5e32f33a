"""One sync of one source: read -> categorise -> score -> persist -> detect, in one transaction.

The overlay keeps, per source, a cursor and a sync number. A full read (audit, first
daemon tick, periodic deletion pass) sees every live record, so whatever the overlay
holds that was not seen is marked `deleted` in the source. Incremental reads pass the
stored cursor and only touch what changed.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import time
from dataclasses import dataclass, field, replace
from typing import Callable

from ..connectors.base import Connector, Record
from ..connectors.registry import make_connector
from ..rules.categorize import Categorizer
from ..rules.config import Config, SourceConfig
from .scoring import Score, score_fact
from .store import OverlayStore

BATCH = 2000
RESCORE_CHUNK = 900   # ids per `IN (…)`: well under SQLite's bound-variable limit


@dataclass
class SyncStats:
    source: str
    rows_read: int = 0
    records: int = 0
    changed: int = 0
    deleted: int = 0
    contradictions: int = 0
    comparisons: int = 0
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0


def content_hash(rec: Record) -> str:
    """What makes a fact 'changed' (access counters are not content)."""
    parts = (rec.text, rec.key, rec.subject, rec.category, rec.created_at, rec.updated_at,
             rec.expires_at, rec.status)
    return hashlib.blake2b(repr(parts).encode("utf-8", "replace"), digest_size=12).hexdigest()


class SyncEngine:
    """Brings the overlay up to date with sources; shared by audit and the daemon."""

    def __init__(self, store: OverlayStore, config: Config, detector=None):
        self.store = store
        self.config = config
        self.categorizer = Categorizer(config.rules, known=set(config.categories))
        self.detector = detector
        # guard(store, source_name) -> context manager entered inside each sync's transaction
        # (overlay/lease.py fences a sync with the source's lease); None: no guard.
        self.guard: Callable | None = None

    # -- scoring ------------------------------------------------------------------------
    def score(self, category: str, learned_at: float | None, as_of: float, access_count: int,
              accessed_at: float | None, expires_at: float | None, confirmed_at: float | None = None,
              confirmations: int = 0) -> Score:
        """Freshness (the design's formula) and confidence (erosion since the last confirmation)."""
        s = score_fact(as_of, learned_at, self.config.policy(category), self.config.thresholds,
                       access_count, accessed_at, expires_at)
        confirmed_at = learned_at if confirmed_at is None else confirmed_at
        return replace(s, confidence=self.config.lifecycle.confidence(as_of, confirmed_at, confirmations))

    def score_row(self, row, as_of: float) -> Score:
        """Score a stored fact; a person's refresh and first sight count as learning."""
        times = [t for t in (row["created_at"], row["updated_at"], row["refreshed_at"]) if t is not None]
        if not times:
            times.append(row["first_seen"])
        return self.score(row["category"], max(times), as_of, row["access_count"], row["accessed_at"],
                          row["expires_at"], max(times), row["confirmations"])

    def rescore(self, as_of: float, source_ids: list[int] | None = None, fact_ids: list[int] | None = None) -> int:
        return self.store.rescore(lambda r: self.score_row(r, as_of), as_of, source_ids, fact_ids=fact_ids)

    # -- sync -----------------------------------------------------------------------------
    def sync(self, source: SourceConfig, as_of: float | None = None, full: bool = True,
             connector: Connector | None = None,
             on_progress: Callable[[int], None] | None = None) -> SyncStats:
        """Read `source` (all of it when `full`, else from the stored cursor) into the overlay."""
        started = time.monotonic()
        now = time.time()
        as_of = now if as_of is None else as_of
        own = connector is None
        connector = connector or make_connector(source)
        stats = SyncStats(source.name)
        if own:
            connector.open()
        try:
            store = self.store
            guard = self.guard(store, source.name) if self.guard else contextlib.nullcontext()
            with store.transaction(), guard:
                source_id = store.ensure_source(source.name, source.connector, source.target,
                                                source.preset)
                sync_no = store.begin_sync(source_id)
                cursor = None if full else store.cursor_of(source_id)
                replaced: list[tuple[str, str, str]] = []
                batch: list[tuple] = []
                rows_before = connector.rows_read
                for rec in connector.read(cursor):
                    batch.append(self._fact_row(rec, source_id, sync_no, now, as_of))
                    if rec.replaced_by:
                        from ..connectors.base import make_ref
                        replaced.append((rec.ref, make_ref(rec.source, rec.table, rec.replaced_by),
                                         rec.replaced_note or "the source marks it replaced"))
                    if len(batch) >= BATCH:
                        store.upsert_facts(batch)
                        stats.records += len(batch)
                        batch.clear()
                        if on_progress:
                            on_progress(stats.records)
                if batch:
                    store.upsert_facts(batch)
                    stats.records += len(batch)
                if full or getattr(connector, "read_all", False):
                    stats.deleted = store.mark_unseen_deleted(source_id, sync_no)
                self._post_score(source_id, sync_no, as_of)
                stats.changed = store.conn.execute(
                    "SELECT count(*) FROM facts WHERE source_id = ? AND changed_sync = ?",
                    (source_id, sync_no)).fetchone()[0]
                stats.contradictions = self._contradictions(source_id, sync_no, replaced, now, stats)
                stats.rows_read = connector.rows_read - rows_before
                store.finish_sync(source_id, sync_no, connector.cursor, stats.rows_read,
                                  stats.changed + stats.deleted, now)
        finally:
            if own:
                connector.close()
        stats.warnings = list(connector.warnings)
        stats.seconds = time.monotonic() - started
        return stats

    def _fact_row(self, rec: Record, source_id: int, sync_no: int, now: float, as_of: float) -> tuple:
        category = self.categorizer.categorize(rec.source, rec.key, rec.text, rec.category)
        rec.category = category
        s = self.score(category, rec.learned_at if rec.learned_at is not None else now, as_of,
                       rec.access_count, rec.accessed_at, rec.expires_at)
        return (source_id, rec.table, json.dumps(rec.pk, sort_keys=False), rec.ref, rec.subject, rec.key,
                rec.text, category, rec.created_at, rec.updated_at, rec.accessed_at, rec.access_count,
                rec.expires_at, content_hash(rec), now, now, sync_no, sync_no, rec.status,
                s.freshness, s.label, s.age_days, s.days_left, s.days_until_expired, s.expired_by, as_of,
                s.confidence)

    def _post_score(self, source_id: int, sync_no: int, as_of: float) -> None:
        """Facts this sync wrote whose age depends on overlay state (refreshed, or no
        timestamps) are rescored; nothing else, so an incremental sync (a daemon tick, an API
        add) does Python work for what it read, not for the whole source."""
        ids = [r[0] for r in self.store.conn.execute(
            "SELECT id FROM facts WHERE source_id = ? AND seen_sync = ? AND (refreshed_at IS NOT NULL "
            "OR (created_at IS NULL AND updated_at IS NULL))", (source_id, sync_no))]
        for i in range(0, len(ids), RESCORE_CHUNK):
            chunk = ids[i:i + RESCORE_CHUNK]
            self.store.conn.executemany("UPDATE facts SET scored_as_of = NULL WHERE id = ?", ((x,) for x in chunk))
            self.rescore(as_of, fact_ids=chunk)

    def _contradictions(self, source_id: int, sync_no: int, replaced, now: float, stats: SyncStats) -> int:
        store = self.store
        changed = store.conn.execute("SELECT id FROM facts WHERE source_id = ? AND changed_sync = ?",
                                     (source_id, sync_no)).fetchall()
        store.clear_contradictions_of(r[0] for r in changed)
        found = 0
        for older_ref, newer_ref, note in replaced:
            older, newer = store.fact_id(older_ref), store.fact_id(newer_ref)
            if older is not None and newer is not None:
                store.add_contradiction(older, newer, "value", 1.0, note, None, now)
                found += 1
        if self.detector is not None:
            from .detect_changed import detect_changed
            found += detect_changed(store, self.detector, source_id, sync_no, now, stats)
        store.apply_contradiction_status()
        return found
