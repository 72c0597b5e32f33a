"""Plan write-back: turn labels into the changes [[actions]] call for (nothing is written).

`plan_actions(config, as_of)` syncs the targeted sources (read-only), checks every
action against the live schema (one bad column refuses the whole plan), and lists what
would change: source, ref, column, old value -> new value.

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
from pathlib import Path
from typing import Any

from memwatch_overlay.connectors.base import Connector
from memwatch_overlay.connectors.registry import make_connector
from memwatch_overlay.connectors.writer import (
    Image,
    Key,
    SourceWriter,
    writer_for,
)
from memwatch_overlay.overlay.engine.audit import open_overlay
from memwatch_overlay.overlay.engine.sync import SyncEngine, content_hash
from memwatch_overlay.overlay.store.actions import (
    ActionLog,
    spec_text,
)
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.rules import action_values as actionvalues
from memwatch_overlay.rules.categorize import Categorizer
from memwatch_overlay.rules.config import Action, Config, SourceConfig

from memwatch_overlay.core.errors import ConfigError, ConnectorError
from memwatch_overlay.core.timeparse import format_like, parse_timestamp, to_iso
from memwatch_overlay.core.vocab import WRITE_KINDS  # noqa: F401

DEFAULT_BATCH = 100      # rows per source transaction: a bot waits for at most one batch
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
            out["set"] = {c: {"old": jsonable(self.old.get(c)), "new": jsonable(v)}
                          for c, v in self.values.items()}
        elif self.do == "annotate":
            out["annotation"] = {c: jsonable(v) for c, v in self.values.items()}
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
        self.hasher: RowHasher | None = None

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
    return store.live_facts_labelled(source_row["id"], labels,
                                     contradicted=any(r.action.when == "contradicted" for r in rules),
                                     changed_sync=source_row["sync_count"] if changed_only else None)


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


def row_hasher(connector: Connector, config: Config, writer: SourceWriter) -> "RowHasher | None":
    """A hasher when a row's record can be rebuilt from its image alone, else None (whole-row check)."""
    return RowHasher(connector, config) if connector.row_local and writer.hash_check else None


def unchanged(hasher: "RowHasher | None", change: Change, current: Image) -> bool:
    """The optimistic check: the row still holds the content the plan was made on.

    Row-local connectors compare the overlay's content hash, so a bot bumping an access
    counter does not block write-back; the others compare the whole row read at planning.
    """
    if hasher is not None:
        return hasher(current, change.key) == change.fact_hash
    return current == change.image


class RowHasher:
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


def jsonable(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"blob": bytes(value).hex()}
    return value
