"""Undo write-back: put rows back exactly from their before-images, unless the bot changed
them after our write; and the history of applied actions."""
from __future__ import annotations

import dataclasses
import time

from memwatch_overlay.connectors.registry import make_connector
from memwatch_overlay.connectors.writer import (
    SourceBusy,
    SourceWriter,
    TakeTurns,
    writer_for,
)
from memwatch_overlay.core.timeparse import parse_timestamp
from memwatch_overlay.overlay.engine.audit import open_overlay
from memwatch_overlay.overlay.store.actions import (
    APPLIED,
    ActionLog,
    LoggedAction,
)
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.overlay.writeback.apply import reconcile_pending
from memwatch_overlay.overlay.writeback.plan import DEFAULT_BATCH
from memwatch_overlay.rules.config import Config, SourceConfig

from memwatch_overlay.core.errors import ConfigError, ConnectorError


@dataclasses.dataclass
class UndoResult:
    restored: list[tuple[LoggedAction, str]] = dataclasses.field(default_factory=list)
    skipped: list[tuple[int, str]] = dataclasses.field(default_factory=list)

    def to_dict(self) -> dict:
        return {"restored": [{"action_id": a.id, "source": a.source, "ref": a.ref, "kind": a.kind,
                              "note": note} for a, note in self.restored],
                "skipped": [{"action_id": i, "reason": r} for i, r in self.skipped]}


def undo_actions(config: Config | None, *, ids: list[int] | None = None, since: float | None = None,
                 overlay_path: str | None = None, store: OverlayStore | None = None,
                 batch_size: int = DEFAULT_BATCH) -> UndoResult:
    """Put back what actions `ids` (or every action from `since` on) changed, newest first.

    A row is restored only while it still holds exactly what we wrote; a row the bot has
    changed since is left alone and reported as skipped. A row our expiry let the store's
    own sweeper delete is inserted again from its before-image.
    """
    if not ids and since is None:
        raise ConfigError("give ACTION_ID(s) or --since TIME", field="ACTION_ID")
    own = store is None
    store = store or open_overlay(config, overlay_path)
    result = UndoResult()
    try:
        log = ActionLog(store)
        _reconcile_all(config, store, log)
        chosen: dict[int, LoggedAction] = {}
        for action_id in ids or []:
            a = log.get(action_id)
            if a is None:
                raise ConfigError(f"no action {action_id} in the overlay {store.label}", field="ACTION_ID")
            if a.undone_at is not None:
                result.skipped.append((a.id, "already undone"))
            elif a.state != APPLIED:
                result.skipped.append((a.id, f"never applied ({a.state})"))
            else:
                chosen[a.id] = a
        if since is not None:
            for a in log.since(since):
                chosen.setdefault(a.id, a)
        ordered = sorted(chosen.values(), key=lambda a: -a.id)
        notes = [a for a in ordered if a.kind == "annotate"]
        if notes:
            log.mark_undone([a.id for a in notes], time.time(), note="annotation withdrawn")
            result.restored.extend((a, "annotation withdrawn") for a in notes)
        groups: dict[tuple[str, str], list[LoggedAction]] = {}
        for a in ordered:
            if a.kind != "annotate":
                groups.setdefault((a.source, a.tbl), []).append(a)
        for (name, tbl), actions in groups.items():
            _undo_group(config, store, log, name, tbl, actions, batch_size, result)
        return result
    finally:
        if own:
            store.close()


def _source_for_undo(config: Config | None, store: OverlayStore, name: str, tbl: str) -> SourceConfig:
    if config is not None:
        for s in config.sources:
            if s.name == name:
                return dataclasses.replace(s, table=tbl, query=None)
    row = store.source_row(name)
    if row is None:
        raise ConfigError(f"source {name!r} is neither in the config nor in the overlay", field="ACTION_ID")
    return SourceConfig(name=name, connector=row["connector"], preset=row["preset"], table=tbl,
                        path=row["target"] if row["connector"] != "postgres" else None,
                        dsn=row["target"] if row["connector"] == "postgres" else None)


def _reconcile_all(config: Config | None, store: OverlayStore, log: ActionLog) -> None:
    """Settle every pending entry first, so an interrupted apply can be undone like any other."""
    for name, tbl in sorted({(a.source, a.tbl) for a in log.pending()}):
        connector = make_connector(_source_for_undo(config, store, name, tbl))
        try:
            connector.open()
            reconcile_pending(log, writer_for(connector, tbl), name)
        except ConnectorError:
            continue          # source unreachable now: the entries stay pending until it is back
        finally:
            connector.close()


def _undo_group(config: Config | None, store: OverlayStore, log: ActionLog, name: str, tbl: str,
                actions: list[LoggedAction], batch_size: int, result: UndoResult) -> None:
    connector = make_connector(_source_for_undo(config, store, name, tbl))
    connector.open()
    try:
        writer = writer_for(connector, tbl)
        for batch in TakeTurns().batches(actions, batch_size):
            outcomes: list[tuple[LoggedAction, str | None, str]] = []
            try:
                with writer.transaction() as txn:
                    for a in batch:
                        outcomes.append((a, *_undo_one(txn, writer, a)))
            except (SourceBusy, ConnectorError) as exc:
                result.skipped.extend((a.id, str(exc)) for a in batch)
                continue
            now = time.time()
            for a, note, skip in outcomes:
                if skip:
                    result.skipped.append((a.id, skip))
                else:
                    log.mark_undone([a.id], now, note=note)
                    result.restored.append((a, note))
    finally:
        connector.close()


def _undo_one(txn, writer: SourceWriter, a: LoggedAction) -> tuple[str | None, str]:
    """(note, "") when restored, (None, reason) when left alone."""
    key = writer.decode_image(a.key)
    before = writer.decode_image(a.before)
    after = writer.decode_image(a.after)
    current = txn.read(key)
    if current is not None and current == before:
        return "already as it was before", ""
    if a.kind == "set":
        if current is None:
            if not a.sweepable:
                return None, "the row was deleted after our write; not re-created"
            if not _expiry_passed(writer, a, after):
                # deleted before the expiry we wrote: the user or the bot ("forget that"), not
                # the store's TTL sweeper; putting it back would undo their deletion
                return None, ("the row was deleted before the expiry we wrote had passed (not by the "
                              "store's sweeper); not re-created")
            txn.insert(key, before)
            note = "re-inserted (the store's sweeper had removed the expired row)"
        elif current == after:
            txn.restore(key, before)
            note = "restored"
        else:
            return None, "changed after our write; left as the bot wrote it"
    else:
        if current is not None:
            return None, "a row with this key exists again; left alone"
        txn.insert(key, before)
        note = "re-inserted"
    if txn.read(key) != before:
        note += " (the store changed some values on its own, e.g. a trigger)"
    return note, ""



def _expiry_passed(writer: SourceWriter, a: LoggedAction, after) -> bool:
    """Whether a deletion of the row matches the sweeper's rule: an expiry column we wrote
    (a timestamp in the action's values) lies in the past now."""
    written = writer.plain(after) or {}
    now = time.time()
    for col in (a.values or {}):
        try:
            moment = parse_timestamp(written.get(col))
        except (TypeError, ValueError):
            continue
        if moment is not None and moment <= now:
            return True
    return False


def action_history(config: Config | None, *, overlay_path: str | None = None, limit: int = 50,
                   source_name: str | None = None) -> list[LoggedAction]:
    """The latest actions recorded in the overlay, oldest first (for `history`)."""
    with open_overlay(config, overlay_path) as store:
        return ActionLog(store).history(limit, source_name)
