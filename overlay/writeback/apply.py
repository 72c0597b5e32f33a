"""Apply a plan: annotations into the overlay, the rest to the source, only when asked.

Writes go per connector (connectors/writer.py), in short transactions by primary key. A row
whose content no longer matches what the overlay saw is skipped (the bot changed it; the
next sync and plan pick it up again). Every write keeps a typed before-image in the overlay.
"""
from __future__ import annotations

import dataclasses
import random
import time
import uuid

from memwatch_overlay.connectors.registry import make_connector
from memwatch_overlay.connectors.writer import (
    Image,
    Key,
    SourceBusy,
    SourceLocked,
    SourceWriter,
    TakeTurns,
    writer_for,
)
from memwatch_overlay.overlay.store.actions import (
    APPLIED,
    FAILED,
    PENDING,
    ActionLog,
)
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.overlay.writeback.plan import (
    DEFAULT_BATCH,
    SKIP_CHANGED,
    SKIP_GONE,
    Change,
    Plan,
    RowHasher,
    Skipped,
    jsonable,
    row_hasher,
    unchanged,
)
from memwatch_overlay.rules.config import SourceConfig

from memwatch_overlay.core.errors import ConnectorError
from memwatch_overlay.core.timeparse import to_iso


@dataclasses.dataclass
class ApplyResult:
    run_id: str
    run_at: float
    applied: list[tuple[int, Change]] = dataclasses.field(default_factory=list)
    annotated: list[tuple[int, Change]] = dataclasses.field(default_factory=list)
    skipped: list[Skipped] = dataclasses.field(default_factory=list)
    held: list[Change] = dataclasses.field(default_factory=list)   # writes for sources without apply
    reconciled: int = 0

    def to_dict(self) -> dict:
        return {"run_id": self.run_id, "run_at": to_iso(self.run_at),
                "applied": [{"action_id": i, **c.to_dict()} for i, c in self.applied],
                "annotated": [{"action_id": i, **c.to_dict()} for i, c in self.annotated],
                "skipped": [s.to_dict() for s in self.skipped],
                "held": [c.to_dict() for c in self.held]}


def _entry(change: Change, run_id: str, run_at: float, writer: SourceWriter | None = None,
           key: Key | None = None, **extra) -> dict:
    key = key or change.key
    return {"run_id": run_id, "run_at": run_at, "source": change.source, "tbl": change.table,
            "ref": change.ref, "pk": change.pk, "kind": change.do, "action_index": change.action_index,
            "spec": change.spec, "label": change.label, "fact_hash": change.fact_hash,
            "values": {c: jsonable(v) for c, v in change.values.items()},
            "key": writer.encode_image(key) if writer and key else None,
            "sweepable": change.sweepable, **extra}


def apply_plan(plan: Plan, *, store: OverlayStore | None = None, write_sources: set[str] | None = None,
               batch_size: int = DEFAULT_BATCH) -> ApplyResult:
    """Record the plan's annotations and write its changes to the sources.

    `write_sources` limits writes to those sources (the daemon passes the ones with
    `apply = true`); the others' writes are returned as `held`. Annotations never touch
    a source and are always recorded.
    """
    own = store is None
    store = store or OverlayStore(plan.overlay_path)
    result = ApplyResult(uuid.uuid4().hex, time.time())
    try:
        log = ActionLog(store)
        notes = plan.annotations
        ids = log.add([_entry(c, result.run_id, result.run_at) for c in notes], APPLIED)
        result.annotated = list(zip(ids, notes))
        by_source: dict[str, list[Change]] = {}
        for change in plan.writes:
            by_source.setdefault(change.source, []).append(change)
        for name, changes in by_source.items():
            if write_sources is not None and name not in write_sources:
                result.held.extend(changes)
                continue
            _apply_source(plan, log, plan.sources[name], changes, batch_size, result)
        # Pending entries of an interrupted apply are settled even when this plan writes
        # nothing more to their source (the rows it wrote no longer look like candidates).
        for name in sorted({a.source for a in log.pending()} - set(by_source)):
            source = plan.sources.get(name)
            if source is not None and (write_sources is None or name in write_sources):
                _settle_source(log, source, result)
        if result.applied or result.annotated:
            store.record_run("apply", plan.as_of, sorted(by_source), None,
                             {"applied": len(result.applied), "annotated": len(result.annotated),
                              "skipped": len(result.skipped)}, started_at=result.run_at)
        return result
    finally:
        if own:
            store.close()


def _apply_source(plan: Plan, log: ActionLog, source: SourceConfig, changes: list[Change],
                  batch_size: int, result: ApplyResult) -> None:
    connector = make_connector(source)
    connector.open()
    try:
        writer = writer_for(connector, changes[0].table)
        hasher = row_hasher(connector, plan.config, writer)
        settled: set[str] = set()
        result.reconciled += reconcile_pending(log, writer, source.name, settled)
        if settled:
            # Rows an interrupted apply did write (now settled as applied): the plan was made
            # before that was known; writing them again would log a second applied record
            # and move an expiry later.
            again = [c for c in changes if c.ref in settled]
            result.skipped.extend(Skipped(c, SKIP_SETTLED) for c in again)
            changes = [c for c in changes if c.ref not in settled]
        for batch in TakeTurns().batches(changes, batch_size):
            _apply_with_retries(log, writer, hasher, batch, result)
    finally:
        connector.close()


def _settle_source(log: ActionLog, source: SourceConfig, result: ApplyResult) -> None:
    for tbl in sorted({a.tbl for a in log.pending([source.name])}):
        connector = make_connector(dataclasses.replace(source, table=tbl, query=None)
                                   if source.table else source)
        connector.open()
        try:
            result.reconciled += reconcile_pending(log, writer_for(connector, tbl), source.name)
        finally:
            connector.close()


BUSY_RETRIES = 4          # further attempts of a batch the store was too busy for
RETRY_BASE = 0.25         # seconds; attempt n waits RETRY_BASE * 2**n, jittered (x0.5..1.5)


class _Busy(Exception):
    """A batch met a busy store and may be tried again."""


def _apply_with_retries(log: ActionLog, writer: SourceWriter, hasher: "RowHasher | None",
                        batch: list[Change], result: ApplyResult, sleep=time.sleep) -> None:
    """One batch, tried again with jittered backoff while the store is busy (a bot in
    rollback-journal mode holding its lock): each attempt re-reads every row, so a retry
    is as safe as the first try. The last attempt's failure is reported as skipped."""
    for attempt in range(BUSY_RETRIES + 1):
        mark = len(result.skipped)
        try:
            _apply_batch(log, writer, hasher, batch, result, retry=attempt < BUSY_RETRIES)
            return
        except _Busy:
            del result.skipped[mark:]
            sleep(RETRY_BASE * 2 ** attempt * random.uniform(0.5, 1.5))


def _apply_batch(log: ActionLog, writer: SourceWriter, hasher: "RowHasher | None", batch: list[Change],
                 result: ApplyResult, retry: bool = False) -> None:
    done: list[tuple[Change, dict]] = []
    settled: set[int] = set()     # positions in batch already reported as skipped
    pending: list[int] = []
    try:
        with writer.transaction() as txn:
            for pos, change in enumerate(batch):
                current = txn.read(change.key)
                if current is None:
                    result.skipped.append(Skipped(change, SKIP_GONE))
                    settled.add(pos)
                    continue
                if not unchanged(hasher, change, current):
                    result.skipped.append(Skipped(change, SKIP_CHANGED))
                    settled.add(pos)
                    continue
                if change.do == "set":
                    txn.update(change.key, change.values)
                    after = txn.read(change.key)
                    key = change.key
                else:
                    key = txn.delete(change.key) or change.key    # JSON: the position at deletion
                    after = None
                done.append((change, _entry(change, result.run_id, result.run_at, writer, key=key,
                                            before=writer.encode_image(current),
                                            after=writer.encode_image(after),
                                            after_hash=_after_hash(hasher, after, change))))
            if done:
                # logged before the source commits: a crash in between leaves `pending`
                pending = log.add([e for _, e in done], PENDING)
    except (SourceBusy, ConnectorError) as exc:
        if pending:
            log.set_state(pending, FAILED, note=str(exc))
        if retry and isinstance(exc, SourceLocked):
            raise _Busy() from None
        for pos, change in enumerate(batch):
            if pos not in settled:
                result.skipped.append(Skipped(change, str(exc)))
        return
    except BaseException:
        if pending:
            log.set_state(pending, FAILED, note="source transaction rolled back")
        raise
    if pending:
        log.set_state(pending, APPLIED)
        result.applied.extend(zip(pending, [c for c, _ in done]))


def _after_hash(hasher: "RowHasher | None", after: Image | None, change: Change) -> str | None:
    """The content hash the next sync will see for the row we wrote (None: not computable)."""
    return hasher(after, change.key) if hasher is not None else None


SKIP_SETTLED = "already written by an interrupted apply (settled as applied)"


def reconcile_pending(log: ActionLog, writer: SourceWriter, source: str,
                      settled: set[str] | None = None) -> int:
    """Settle `pending` actions left by a crash: applied if the row shows our write, else failed.

    Idempotent: each pending entry is settled once; `settled` collects the refs found applied."""
    entries = [a for a in log.pending([source]) if a.tbl == writer.table]
    if not entries:
        return 0
    applied, failed = [], []
    with writer.transaction() as txn:
        for a in entries:
            key = writer.decode_image(a.key)
            current = txn.read(key)
            if a.kind == "delete":
                ok = current is None
            else:
                ok = current is not None and current == writer.decode_image(a.after)
            (applied if ok else failed).append(a.id)
            if ok and settled is not None:
                settled.add(a.ref)
    if applied:
        log.set_state(applied, APPLIED, note="settled after an interrupted apply")
    if failed:
        log.set_state(failed, FAILED, note="interrupted before the source committed")
    return len(entries)


