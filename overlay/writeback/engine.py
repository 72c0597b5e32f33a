"""Write-back: turn labels into [[actions]], apply them only when asked, undo them exactly.

Three steps, each a library function the CLI and the daemon call:

- `plan_actions(config, as_of)` syncs the targeted sources (read-only), checks every
  action against the live schema (one bad column refuses the whole plan), and lists what
  would change: source, ref, column, old value -> new value. It writes nothing anywhere.
- `apply_plan(plan)` records annotations in the overlay and writes the rest to the source,
  per connector (connectors/writer.py), in short transactions by primary key. A row whose
  content no longer matches what the overlay saw is skipped (the bot changed it; the next
  sync and plan pick it up again). Every write keeps a typed before-image in the overlay.
- `undo_actions(config, ids=… | since=…)` puts rows back exactly, unless the bot changed
  them after our write.

For each fact, all matching `annotate` actions apply and the first matching write action
(`set`, `delete`, `expire`) wins, like [[rules]]. An action is not planned twice for the
same content of a row (see ActionLog.done_keys), so a daemon does not rewrite `now` every
tick and an undone action stays undone until the bot changes the memory.
"""
from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import json
import time
import uuid
from pathlib import Path
from typing import Any, Callable

from memwatch_overlay.connectors.base import Connector
from memwatch_overlay.connectors.registry import make_connector
from memwatch_overlay.connectors.writer import (
    Image,
    Key,
    SourceBusy,
    SourceWriter,
    TakeTurns,
    writer_for,
)
from memwatch_overlay.rules.categorize import Categorizer
from memwatch_overlay.rules.config import Action, Config, SourceConfig
from memwatch_overlay.rules import action_values as actionvalues
from memwatch_overlay.overlay.store.actions import (
    APPLIED,
    FAILED,
    PENDING,
    ActionLog,
    LoggedAction,
    spec_text,
)
from memwatch_overlay.overlay.engine.audit import open_overlay
from memwatch_overlay.core.errors import ConfigError, ConnectorError
from memwatch_overlay.overlay.store.database import LIVE, OverlayStore
from memwatch_overlay.overlay.engine.sync import SyncEngine, content_hash
from memwatch_overlay.core.timeparse import format_like, parse_timestamp, to_iso

DEFAULT_BATCH = 100      # rows per source transaction: a bot waits for at most one batch
WRITE_KINDS = ("set", "delete")
FACT_FIELDS = ("freshness", "label", "status", "category", "days_left", "days_until_expired",
               "age_days", "ref", "subject", "key")

SKIP_CHANGED = "changed in the source since the overlay read it; planned again after the next sync"
SKIP_GONE = "no longer in the source"


@dataclasses.dataclass
class Change:
    """One planned action on one fact."""

    do: str                          # annotate | set | delete
    source: str
    table: str
    ref: str
    pk: dict[str, str]
    action_index: int
    spec: dict
    label: str | None
    status: str
    fact_hash: str
    values: dict[str, Any] = dataclasses.field(default_factory=dict)   # new values / annotation
    old: dict[str, Any] = dataclasses.field(default_factory=dict)      # current values of those columns
    key: Key | None = None           # typed key of the source row (writes)
    image: Image | None = None       # the whole row when planned (the check for non-row-local presets)
    sweepable: bool = False          # writes a time into the store's own expiry column

    def to_dict(self) -> dict:
        out = {"do": self.do, "action": self.action_index, "source": self.source, "table": self.table,
               "ref": self.ref, "pk": self.pk, "label": self.label, "status": self.status}
        if self.do == "set":
            out["set"] = {c: {"old": _jsonable(self.old.get(c)), "new": _jsonable(v)}
                          for c, v in self.values.items()}
        elif self.do == "annotate":
            out["annotation"] = {c: _jsonable(v) for c, v in self.values.items()}
        return out


@dataclasses.dataclass
class Skipped:
    change: Change
    reason: str

    def to_dict(self) -> dict:
        return {**self.change.to_dict(), "reason": self.reason}


@dataclasses.dataclass
class Plan:
    """What [[actions]] call for at `as_of`; nothing has been written."""

    config: Config
    as_of: float
    now: float
    overlay_path: Path | str     # a file, or a postgresql:// DSN
    sources: dict[str, SourceConfig]
    changes: list[Change] = dataclasses.field(default_factory=list)
    skipped: list[Skipped] = dataclasses.field(default_factory=list)
    already: int = 0        # matching facts an action already handled (applied or undone) as they are

    @property
    def writes(self) -> list[Change]:
        return [c for c in self.changes if c.do in WRITE_KINDS]

    @property
    def annotations(self) -> list[Change]:
        return [c for c in self.changes if c.do == "annotate"]

    def to_dict(self) -> dict:
        return {"version": 1, "as_of": to_iso(self.as_of), "now": to_iso(self.now),
                "already_handled": self.already,
                "changes": [c.to_dict() for c in self.writes],
                "annotations": [c.to_dict() for c in self.annotations],
                "skipped": [s.to_dict() for s in self.skipped]}


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


@dataclasses.dataclass
class UndoResult:
    restored: list[tuple[LoggedAction, str]] = dataclasses.field(default_factory=list)
    skipped: list[tuple[int, str]] = dataclasses.field(default_factory=list)

    def to_dict(self) -> dict:
        return {"restored": [{"action_id": a.id, "source": a.source, "ref": a.ref, "kind": a.kind,
                              "note": note} for a, note in self.restored],
                "skipped": [{"action_id": i, "reason": r} for i, r in self.skipped]}


# -- planning ------------------------------------------------------------------------------
@dataclasses.dataclass
class _Rule:
    index: int
    action: Action
    do: str                      # annotate | set | delete (expire resolved)
    sets: dict[str, Any]
    spec: dict
    spec_key: str


class _SourcePlanner:
    """The connector, writer and validated actions of one source."""

    def __init__(self, config: Config, source: SourceConfig, rules: list[tuple[int, Action]]):
        self.config = config
        self.connector: Connector = make_connector(source)
        self.source = self.connector.source          # preset defaults filled in
        self.writer: SourceWriter | None = None
        self.rules: list[_Rule] = []
        self._samples: dict[str, Any] = {}
        self._raw_rules = rules
        self.hasher: _RowHasher | None = None

    def open(self) -> None:
        self.connector.open()
        for i, action in self._raw_rules:
            self.rules.append(self._validate(i, action))
        self.hasher = row_hasher(self.connector, self.config, self.writer) if self.writer is not None else None

    def close(self) -> None:
        self.connector.close()

    def _fail(self, field: str, message: str):
        raise ConfigError(message, field=field, path=str(self.config.path) if self.config.path else None)

    def _validate(self, i: int, action: Action) -> _Rule:
        where = f"actions[{i}]"
        do, sets = action.do, dict(action.set)
        if do == "expire":
            natural = self.connector.natural_writebacks.get("expire")
            if not natural:
                self._fail(f"{where}.do", f"source {self.source.name!r} (preset {self.source.preset or 'none'}) "
                           f"declares no natural expiry; use do = \"set\" with a column it has, or \"delete\"")
            do, sets = "set", dict(natural)
        spec = {"when": action.when, "category": action.category, "do": action.do, "source": self.source.name,
                "set": {c: sets[c] for c in sorted(sets)}}
        rule = _Rule(i, action, do, sets, spec, spec_text(spec))
        if do == "annotate":
            return rule
        if self.writer is None:
            try:
                self.writer = writer_for(self.connector)
            except ConnectorError as exc:
                self._fail(where, str(exc))
        problem = self.writer.check_action(do, sets)
        if problem:
            self._fail(f"{where}.do", problem)
        columns = self.writer.columns()
        keys = self.writer.key_columns()
        for col in sets:
            if col not in columns:
                self._fail(f"{where}.set.{col}", f"no column {col!r} in {self.writer.table} of source "
                           f"{self.source.name!r} (columns: {', '.join(columns)}); write-back only uses "
                           f"columns the source already has")
            if col in keys:
                self._fail(f"{where}.set.{col}", f"{col!r} is part of the primary key of "
                           f"{self.writer.table}; write-back never changes keys")
        return rule

    # values -----------------------------------------------------------------------
    def expiry_columns(self) -> set[str]:
        cols = set(self.connector.natural_writebacks.get("expire", {}))
        if self.source.expires_at and self.writer and self.source.expires_at in self.writer.columns():
            cols.add(self.source.expires_at)
        return cols

    def time_sample(self, col: str, image: Image) -> Any:
        """A value of `col` whose format a timestamp written there should copy."""
        current = (self.writer.plain(image) or {}).get(col)
        if _is_timestamp(current):
            return current
        if col in self.connector.timestamp_samples:
            return self.connector.timestamp_samples[col]
        if col not in self._samples:
            sample = self.writer.sample(col)
            if sample is None:
                declared = self.writer.declared_type(col).upper()
                sample = 0 if "INT" in declared else 0.0 if any(t in declared for t in ("REAL", "FLOA", "DOUB")) else None
            self._samples[col] = sample
        return self._samples[col]

    def render(self, rule: _Rule, fact: dict, image: Image | None, now: float, as_of: float) -> dict:
        out = {}
        for col, template in rule.sets.items():
            value = actionvalues.render(template, fact, now, as_of)
            if isinstance(value, actionvalues.TimeValue):
                value = format_like(self.time_sample(col, image or {}), value.epoch) if image is not None \
                    else to_iso(value.epoch)
            out[col] = value
        return out


def _is_timestamp(value: Any) -> bool:
    if value is None or isinstance(value, bool):
        return False
    try:
        return parse_timestamp(value) is not None
    except (ValueError, TypeError, OverflowError):
        return False


def _matches(action: Action, fact) -> bool:
    if action.when == "contradicted":
        hit = fact["status"] == "contradicted"
    else:
        hit = fact["label"] == action.when
    return hit and fnmatch.fnmatchcase(fact["category"] or "", action.category)


def _targeted(config: Config, source_names: list[str] | None) -> list[tuple[SourceConfig, list[tuple[int, Action]]]]:
    out = []
    for source in config.sources:
        if source_names is not None and source.name not in source_names:
            continue
        rules = [(i, a) for i, a in enumerate(config.actions) if a.source in (None, source.name)]
        if rules:
            out.append((source, rules))
    return out


def plan_actions(config: Config, as_of: float | None = None, *, store: OverlayStore | None = None,
                 overlay_path: str | None = None, source_names: list[str] | None = None,
                 sync: bool = True, changed_only: bool = False, now: float | None = None) -> Plan:
    """What the config's [[actions]] would change at `as_of`. Reads sources; writes nothing to them.

    `sync` first reads the sources into the overlay at `as_of` (as `audit` does). The daemon,
    whose overlay is current, passes False: labels are taken as the overlay holds them, and
    with `changed_only` only facts its last sync changed are considered, so a tick costs
    what changed. `now` (default: the wall clock) is the time `now` writes.

    Example:
        plan = plan_actions(load_config("memwatch.toml"), as_of=parse_as_of("2026-11-29"))
        for change in plan.writes: print(change.ref, change.old, "->", change.values)
    """
    as_of = time.time() if as_of is None else as_of
    now = time.time() if now is None else now
    if source_names:
        for name in source_names:
            config.source(name)
    own = store is None
    store = store or open_overlay(config, overlay_path)
    try:
        with contextlib.ExitStack() as stack:
            planners = []
            for source, rules in _targeted(config, source_names):
                planner = _SourcePlanner(config, source, rules)
                stack.callback(planner.close)
                planner.open()        # validates every action against the live schema
                planners.append(planner)
            if sync:     # the same contradiction detector an audit uses, so `contradicted` matches
                from memwatch_overlay.overlay.detect.blocks import make_detector
                engine = SyncEngine(store, config, detector=make_detector(config))
            else:
                engine = SyncEngine(store, config)
            if sync:
                for planner in planners:
                    engine.sync(planner.source, as_of=as_of, full=True)
                    engine.rescore(as_of, [store.source_row(planner.source.name)["id"]])
                    if planner.writer is not None:
                        planner.writer.refresh()    # look rows up in what the sync just read
            plan = Plan(config, as_of, now, store.path, {p.source.name: p.source for p in planners})
            for planner in planners:
                _plan_source(store, planner, plan, changed_only)
        return plan
    finally:
        if own:
            store.close()


def _candidates(store: OverlayStore, source_row, rules: list[_Rule], changed_only: bool) -> list:
    """Live facts whose label (or contradicted status) some rule asks for, in SQL."""
    labels = sorted({r.action.when for r in rules if r.action.when != "contradicted"})
    conds, params = [], [source_row["id"]]
    if labels:
        conds.append(f"label IN ({', '.join('?' * len(labels))})")
        params += labels
    if any(r.action.when == "contradicted" for r in rules):
        conds.append("status = 'contradicted'")
    sql = f"SELECT * FROM facts WHERE source_id = ? AND {LIVE} AND ({' OR '.join(conds)})"
    if changed_only:
        sql += " AND changed_sync = ?"
        params.append(source_row["sync_count"])
    return store.conn.execute(sql + " ORDER BY id", params).fetchall()


def _plan_source(store: OverlayStore, planner: _SourcePlanner, plan: Plan, changed_only: bool) -> None:
    row = store.source_row(planner.source.name)
    if row is None or not planner.rules:
        return
    facts = _candidates(store, row, planner.rules, changed_only)
    refs = [f["ref"] for f in facts] if changed_only else None
    log = ActionLog(store)
    done = log.done_keys(planner.source.name, refs)
    written = log.written_images(planner.source.name, refs) if planner.hasher is None else {}
    expiry = planner.expiry_columns()
    for fact in facts:
        fields = {k: fact[k] for k in FACT_FIELDS}
        wrote = False
        for rule in planner.rules:
            if not _matches(rule.action, fact):
                continue
            if rule.do != "annotate":
                if wrote:
                    continue
                wrote = True
            if (fact["ref"], rule.spec_key, fact["content_hash"]) in done:
                plan.already += 1
                continue
            change = Change(rule.do, planner.source.name, fact["tbl"], fact["ref"], json.loads(fact["pk"]),
                            rule.index, rule.spec, fact["label"], fact["status"], fact["content_hash"])
            if rule.do == "annotate":
                change.values = planner.render(rule, fields, None, plan.now, plan.as_of)
                plan.changes.append(change)
                continue
            located = planner.writer.locate(change.pk)
            if located is None:
                plan.skipped.append(Skipped(change, SKIP_GONE))
                continue
            change.key, image = located
            if planner.writer.encode_image(image) in written.get((fact["ref"], rule.spec_key), []):
                plan.already += 1
                continue
            if planner.hasher is not None and planner.hasher(image, change.key) != fact["content_hash"]:
                plan.skipped.append(Skipped(change, SKIP_CHANGED))
                continue
            change.image = image
            if rule.do == "set":
                change.values = planner.render(rule, fields, image, plan.now, plan.as_of)
                current = planner.writer.plain(image)
                timed = {c for c in expiry & set(change.values) if actionvalues.is_time(rule.sets[c])}
                for col in list(timed):
                    if _not_later(current.get(col), change.values[col]):
                        del change.values[col]     # never push an expiry later than it is
                        timed.discard(col)
                change.old = {c: current.get(c) for c in change.values}
                if all(planner.writer.holds(image, c, change.values[c]) for c in change.values):
                    continue              # the row already holds these values (or expires sooner)
                change.sweepable = bool(timed)
            plan.changes.append(change)


def _not_later(current: Any, new: Any) -> bool:
    """True when the stored expiry `current` is already no later than `new`."""
    if not _is_timestamp(current) or not _is_timestamp(new):
        return False
    return parse_timestamp(current) <= parse_timestamp(new)


def _jsonable(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"blob": bytes(value).hex()}
    return value


# -- applying ------------------------------------------------------------------------------
def row_hasher(connector: Connector, config: Config, writer: SourceWriter) -> "_RowHasher | None":
    """A hasher when a row's record can be rebuilt from its image alone, else None (whole-row check)."""
    return _RowHasher(connector, config) if connector.row_local and writer.hash_check else None


def unchanged(hasher: "_RowHasher | None", change: Change, current: Image) -> bool:
    """The optimistic check: the row still holds the content the plan was made on.

    Row-local connectors compare the overlay's content hash, so a bot bumping an access
    counter does not block write-back; the others compare the whole row read at planning.
    """
    if hasher is not None:
        return hasher(current, change.key) == change.fact_hash
    return current == change.image


class _RowHasher:
    """The overlay's content hash of a source row, computed exactly as a sync does."""

    def __init__(self, connector: Connector, config: Config):
        self.connector = connector
        columns = connector.query_columns()
        self.mapping = connector.mapping(columns)
        self.pks = connector.pk_columns(columns)
        self.categorizer = Categorizer(config.rules, known=set(config.categories))

    def __call__(self, image: Image | None, key: Key) -> str | None:
        if image is None:
            return None
        row = {col: value for col, (_, value) in image.items()}
        for name, (_, value) in key.items():
            row.setdefault(name, value)
        rec = self.connector.row_to_record(row, self.pks, self.mapping)
        if rec is None:
            return None
        rec.category = self.categorizer.categorize(rec.source, rec.key, rec.text, rec.category)
        return content_hash(rec)


def _entry(change: Change, run_id: str, run_at: float, writer: SourceWriter | None = None,
           key: Key | None = None, **extra) -> dict:
    key = key or change.key
    return {"run_id": run_id, "run_at": run_at, "source": change.source, "tbl": change.table,
            "ref": change.ref, "pk": change.pk, "kind": change.do, "action_index": change.action_index,
            "spec": change.spec, "label": change.label, "fact_hash": change.fact_hash,
            "values": {c: _jsonable(v) for c, v in change.values.items()},
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
        result.reconciled += _reconcile(log, writer, source.name)
        for batch in TakeTurns().batches(changes, batch_size):
            _apply_batch(log, writer, hasher, batch, result)
    finally:
        connector.close()


def _apply_batch(log: ActionLog, writer: SourceWriter, hasher: "_RowHasher | None", batch: list[Change],
                 result: ApplyResult) -> None:
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


def _after_hash(hasher: "_RowHasher | None", after: Image | None, change: Change) -> str | None:
    """The content hash the next sync will see for the row we wrote (None: not computable)."""
    return hasher(after, change.key) if hasher is not None else None


def _reconcile(log: ActionLog, writer: SourceWriter, source: str) -> int:
    """Settle `pending` actions left by a crash: applied if the row shows our write, else failed."""
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
    if applied:
        log.set_state(applied, APPLIED, note="settled after an interrupted apply")
    if failed:
        log.set_state(failed, FAILED, note="interrupted before the source committed")
    return len(entries)


# -- undo ----------------------------------------------------------------------------------
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
            _reconcile(log, writer_for(connector, tbl), name)
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


# -- daemon --------------------------------------------------------------------------------
def after_sync(store: OverlayStore, config: Config, source: SourceConfig,
               as_of: float | None = None, changed_only: bool = False) -> ApplyResult | None:
    """The daemon's hook, called after each sync of `source`.

    Plans that source's [[actions]] from the overlay it just synced, records annotations,
    and writes back only when the source has `apply = true`; writes of other sources stay
    in `held`. Rows skipped because the bot changed them are planned again next tick.
    """
    if not any(a.source in (None, source.name) for a in config.actions):
        return None
    plan = plan_actions(config, as_of, store=store, source_names=[source.name], sync=False,
                        changed_only=changed_only)
    return apply_plan(plan, store=store, write_sources={source.name} if source.apply else set())


def writeback_hook(config: Config) -> Callable[[Any], None]:
    """The callable a daemon appends to its `after_sync` hooks.

    It receives the daemon's event (duck-typed: `.kind`, `.source`, `.store`): after an
    incremental sync only that sync's changed facts are planned; after a full sync or a
    rescore (labels moved with time; `source` None means every source) all matching facts
    are, which also retries rows skipped earlier because the source was busy.
    """
    def hook(event) -> None:
        if event.kind == "deletions":
            return                      # deleted facts are not live: nothing new to plan
        sources = [event.source] if event.source is not None else list(config.sources)
        for source in sources:
            after_sync(event.store, config, source, changed_only=event.kind == "sync")
    return hook


def action_history(config: Config | None, *, overlay_path: str | None = None, limit: int = 50,
                   source_name: str | None = None) -> list[LoggedAction]:
    """The latest actions recorded in the overlay, oldest first (for `history`)."""
    with open_overlay(config, overlay_path) as store:
        return ActionLog(store).history(limit, source_name)
