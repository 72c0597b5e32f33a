"""The native source: facts stored through the Python API (`MemWatch.add`) or `memwatch-overlay add`.

They have no store of their own: the overlay is their store. They still go through the
same SyncEngine as any source (categorised by the same rules, scored by the same formula
and config, compared for contradictions), as source `memwatch`, table `facts`, primary
key `{"key": KEY}` (or `{"subject": S, "key": KEY}`), so `report`, `stats`, `search`,
`gc` and `export` see them like the facts of any other source.

Two differences follow from the overlay being their store: adding the same value again
is a re-confirmation (like `refresh`), and forgetting one erases its row (there is no
source that would bring it back).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Iterator

from memwatch_overlay.connectors.base import Connector, Record, make_ref
from memwatch_overlay.rules.config import NATIVE_SOURCE, Config, SourceConfig
from memwatch_overlay.core.errors import ConfigError
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.overlay.engine.sync import SyncEngine, SyncStats
from memwatch_overlay.core.vocab import LIVE_STATUSES  # noqa: F401 (re-exported to the API)

NATIVE_TABLE = "facts"
NATIVE_CONNECTOR = "native"


def native_pk(subject: str | None, key: str) -> dict[str, str]:
    return {"key": key} if subject is None else {"subject": subject, "key": key}


def native_ref(subject: str | None, key: str) -> str:
    """`memwatch:facts:KEY` or `memwatch:facts:SUBJECT:KEY`."""
    return make_ref(NATIVE_SOURCE, NATIVE_TABLE, native_pk(subject, key))


def native_source(overlay_path: str | Path) -> SourceConfig:
    return SourceConfig(name=NATIVE_SOURCE, connector=NATIVE_CONNECTOR, path=str(overlay_path))


class NativeConnector(Connector):
    """Yields the records handed to it: the API's facts enter the overlay like any source's."""

    kind = NATIVE_CONNECTOR
    description = "facts added through the Python API or `memwatch-overlay add`"

    def __init__(self, source: SourceConfig, records: list[Record]):
        super().__init__(source)
        self.records = records

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass

    def read(self, cursor=None) -> Iterator[Record]:
        for rec in self.records:
            self.rows_read += 1
            yield rec


def resolve_ref(store: OverlayStore, ref_or_key: str, subject: str | None = None) -> str | None:
    """A fact's ref from a ref (`bot:agent_facts:42`) or a native key (`employer`)."""
    if store.fact_id(ref_or_key) is not None:
        return ref_or_key
    ref = native_ref(subject, ref_or_key)
    return ref if store.fact_id(ref) is not None else None


def check_category(config: Config, category: str | None) -> str | None:
    if category is None:
        return None
    name = category.strip().lower()
    if name not in config.categories:
        raise ConfigError(f"unknown category {category!r} (known: {', '.join(sorted(config.categories))}; "
                          "add one with [categories.NAME] or TTLConfig.set_half_life)", field="category")
    return name


def add_fact(store: OverlayStore, config: Config, key: str, value: str, *, category: str | None = None,
             subject: str | None = None, now: float | None = None, detector=None) -> tuple[str, SyncStats | None]:
    """Store `key = value` as a native fact at `now`; returns its ref and the sync's stats.

    The same value again (same category) only re-confirms the fact (no sync, stats None).
    """
    if not isinstance(key, str) or not key.strip():
        raise ConfigError("a fact needs a non-empty key", field="key")
    if value is None or str(value).strip() == "":
        raise ConfigError(f"fact {key!r} needs a non-empty value", field="value")
    value = str(value)
    category = check_category(config, category)
    now = time.time() if now is None else now
    ref = native_ref(subject, key)
    row = store.fact_row(ref)
    engine = SyncEngine(store, config, detector=detector)
    if (row is not None and row["status"] in LIVE_STATUSES and row["text"] == value
            and (category is None or category == row["category"])):
        with store.transaction():
            store.mark_refreshed([ref], now)
            engine.rescore(now, fact_ids=[row["id"]])
        return ref, None
    rec = Record(source=NATIVE_SOURCE, table=NATIVE_TABLE, pk=native_pk(subject, key), text=value,
                 subject=subject, key=key, category=category,
                 created_at=row["created_at"] if row is not None else now,
                 updated_at=now if row is not None else None)
    return ref, sync_records(engine, native_source(store.label), [rec], now)


def sync_records(engine: SyncEngine, source: SourceConfig, records: list[Record], now: float) -> SyncStats:
    """Store records handed over in-process (API, framework wrappers) through the sync engine:
    categorised, scored and compared like rows read from a store. An incremental sync:
    nothing else of the source is marked deleted."""
    return engine.sync(source, as_of=now, full=False, connector=NativeConnector(source, records))


def forget_native(store: OverlayStore, refs: list[str]) -> int:
    """Erase native facts (and their contradictions); call inside a transaction."""
    return store.delete_facts_of_source(refs, NATIVE_SOURCE)


def is_native(ref: str) -> bool:
    return ref.startswith(f"{NATIVE_SOURCE}:{NATIVE_TABLE}:")


def apply_updates(store: OverlayStore, config: Config, result, *, now: float | None = None,
                  detector=None) -> list[str]:
    """Carry out a check's suggestions on native facts: UPDATE sets the new value, EXPIRE
    erases the fact. Facts of watched stores are left alone (their store is read-only to
    us). Returns the refs changed."""
    changed = []
    for update in result.suggested_updates:
        if not is_native(update.ref):
            continue
        row = store.fact_row(update.ref)
        if row is None:
            continue
        if update.action == "UPDATE" and update.new_value:
            add_fact(store, config, row["key"], update.new_value, subject=row["subject"], now=now,
                     detector=detector)
        else:
            with store.transaction():
                forget_native(store, [update.ref])
                store.apply_contradiction_status()
        changed.append(update.ref)
    return changed


def apply_to_overlay(config: Config | None, overlay_path: str | None, result) -> list[str]:
    """`check --apply`: open the overlay, apply the result's suggestions, close it."""
    from memwatch_overlay.overlay.engine.audit import open_overlay
    from memwatch_overlay.overlay.detect.blocks import make_detector
    cfg = config or Config()
    with open_overlay(config, overlay_path) as store:
        return apply_updates(store, cfg, result, detector=make_detector(cfg))
