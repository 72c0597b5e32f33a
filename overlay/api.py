"""The Python API: `MemWatch` and `TTLConfig`, on the same overlay engine as every source.

Example:
    from memwatch_overlay import MemWatch, TTLConfig

    mw = MemWatch(db="memwatch.db", ttl_config=TTLConfig().set_half_life("employment", 90))
    mw.add("employer", "Google", category="employment")
    mw.add("city", "Jakarta", category="location")
    result = mw.check("I just moved to Surabaya for my new job at Anthropic")
    print(result.summary)            # 2 contradiction(s) detected. 0 stale memories.
    for update in result.suggested_updates:
        print(update)                # UPDATE employer: 'Google' -> 'Anthropic' …

Facts added here are the overlay's own source `memwatch` (see overlay.native): the CLI
(`memwatch-overlay report --overlay memwatch.db`, `stats`, `search`, `export`) sees them,
scored by the same formula. Pass the same memwatch.toml (`config=`) to both to get the
same half-lives; a TTLConfig lives only in this process.
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Callable

from memwatch_overlay.rules.config import NATIVE_SOURCE, Config, load_config
from memwatch_overlay.core.errors import ConfigError
from memwatch_overlay.overlay.engine.added_facts import (
    LIVE_STATUSES,
    add_fact,
    apply_updates,
    forget_native,
    native_ref,
)
from memwatch_overlay.overlay.engine.scoring import CategoryPolicy, DEFAULT_HALF_LIVES
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.core.timeparse import to_iso
from memwatch_overlay.overlay.engine.check import CheckResult, check_text
from memwatch_overlay.overlay.detect.blocks import make_detector

DEFAULT_DB = "memwatch.db"


class TTLConfig:
    """Per-category half-lives and hard TTLs, on top of the defaults (or a memwatch.toml).

    Setters return the TTLConfig, so calls chain:
        TTLConfig().set_half_life("employment", 90).set_ttl("employment", 540)
    A category that is not one of the nine defaults becomes a new category.
    """

    def __init__(self):
        self._half_lives: dict[str, float] = {}
        self._ttls: dict[str, float | None] = {}

    def set_half_life(self, category: str, days: float) -> "TTLConfig":
        if isinstance(days, bool) or not isinstance(days, (int, float)) or days <= 0:
            raise ConfigError(f"half-life of {category!r} must be a number of days > 0, not {days!r}",
                              field=f"categories.{category}.half_life_days")
        self._half_lives[_category_name(category)] = float(days)
        return self

    def set_ttl(self, category: str, days: float | None) -> "TTLConfig":
        """A hard expiry: past `days` since learned the fact is expired whatever its score (None removes it)."""
        if days is not None and (isinstance(days, bool) or not isinstance(days, (int, float)) or days <= 0):
            raise ConfigError(f"TTL of {category!r} must be a number of days > 0 or None, not {days!r}",
                              field=f"categories.{category}.ttl_days")
        self._ttls[_category_name(category)] = None if days is None else float(days)
        return self

    def apply(self, config: Config) -> Config:
        """A copy of `config` with these half-lives and TTLs."""
        categories = dict(config.categories)
        for name in set(self._half_lives) | set(self._ttls):
            current = categories.get(name) or CategoryPolicy(
                float(DEFAULT_HALF_LIVES.get(name, DEFAULT_HALF_LIVES["general"])))
            categories[name] = CategoryPolicy(self._half_lives.get(name, current.half_life_days),
                                              self._ttls.get(name, current.ttl_days))
        return dataclasses.replace(config, categories=categories)


def _category_name(category: str) -> str:
    if not isinstance(category, str) or not category.strip():
        raise ConfigError("a category needs a non-empty name", field="categories")
    return category.strip().lower()


@dataclasses.dataclass(frozen=True)
class Memory:
    """One fact as the API returns it, scored when it was read."""

    key: str | None
    value: str
    category: str
    subject: str | None
    ref: str
    source: str
    freshness: float
    label: str
    confidence: float | None
    days_left: float | None
    age_days: float
    status: str
    created_at: str | None
    updated_at: str | None
    contradicted_by: tuple[str, ...] = ()

    @classmethod
    def from_row(cls, row) -> "Memory":
        return cls(key=row["key"], value=row["text"], category=row["category"], subject=row["subject"],
                   ref=row["ref"], source=row["source_name"], freshness=row["freshness"], label=row["label"],
                   confidence=row["confidence"], days_left=row["days_left"], age_days=row["age_days"],
                   status=row["status"], created_at=to_iso(row["created_at"]), updated_at=to_iso(row["updated_at"]),
                   contradicted_by=tuple(row["contradicted_by"].split("\x1f")) if row["contradicted_by"] else ())

    def __str__(self) -> str:
        left = "never" if self.days_left is None else f"{self.days_left:.0f}d"
        status = "" if self.status == "active" else f" ({self.status})"
        return (f"{self.key or self.ref}: {self.value} [{self.category}] freshness {self.freshness:.2f} "
                f"{self.label}{status}, confidence {self.confidence:.2f}, {left} left")


class MemWatch:
    """Facts with freshness, expiry and contradiction checks, kept in an overlay database.

    `db` is the overlay file (shared with the CLI's `--overlay`/`--db`); `subject` is the
    default user/namespace of add/check/get; `config` a memwatch.toml path or Config;
    `clock` returns epoch seconds (tests pass a fake one).
    """

    def __init__(self, db: str | Path = DEFAULT_DB, ttl_config: TTLConfig | None = None,
                 use_embeddings: bool = False, subject: str | None = None,
                 config: str | Path | Config | None = None, clock: Callable[[], float] = time.time):
        cfg = config if isinstance(config, Config) else (load_config(config) if config else Config())
        if ttl_config is not None:
            cfg = ttl_config.apply(cfg)
        if use_embeddings:
            cfg = dataclasses.replace(cfg, embeddings={**cfg.embeddings, "enabled": True})
        self.config = cfg
        self.subject = subject
        self.clock = clock
        self.store = OverlayStore(db)
        self.engine = SyncEngine(self.store, self.config)
        self._detector = None

    # -- lifecycle of the object ------------------------------------------------------
    def close(self) -> None:
        self.store.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def detector(self):
        """The config's detector (rules; embeddings with use_embeddings); None when disabled."""
        if self._detector is None:
            self._detector = make_detector(self.config)
        return self._detector

    def _subject(self, subject: str | None) -> str | None:
        return self.subject if subject is None else subject

    def _memory(self, ref: str, now: float | None = None) -> Memory | None:
        row = self.store.fact_row(ref)
        if row is None or row["status"] not in LIVE_STATUSES:
            return None
        self.engine.rescore(self.clock() if now is None else now, fact_ids=[row["id"]])
        return Memory.from_row(self.store.fact_row(ref))

    # -- facts ---------------------------------------------------------------------------
    def add(self, key: str, value: str, category: str | None = None, subject: str | None = None) -> Memory:
        """Store `key = value` (replacing the key's old value). Without `category` the rules pick one."""
        now = self.clock()
        ref, _ = add_fact(self.store, self.config, key, value, category=category,
                          subject=self._subject(subject), now=now, detector=self.detector)
        return self._memory(ref, now)

    def get(self, key: str, subject: str | None = None) -> Memory | None:
        """The fact stored under `key`, scored now; None when there is none."""
        return self._memory(native_ref(self._subject(subject), key))

    def refresh(self, key: str, subject: str | None = None) -> Memory:
        """Re-confirm a fact now: freshness and confidence restart."""
        ref = self._require(key, subject)
        now = self.clock()
        with self.store.transaction():
            self.store.mark_refreshed([ref], now)
        return self._memory(ref, now)

    def forget(self, key: str, subject: str | None = None) -> bool:
        """Erase a fact (and the contradictions it took part in). False when there was none."""
        ref = native_ref(self._subject(subject), key)
        with self.store.transaction():
            n = forget_native(self.store, [ref])
            self.store.apply_contradiction_status()
        return n > 0

    def _require(self, key: str, subject: str | None) -> str:
        ref = native_ref(self._subject(subject), key)
        if self.store.fact_id(ref) is None:
            raise ConfigError(f"no fact {key!r}" + (f" for subject {self._subject(subject)!r}"
                                                     if self._subject(subject) is not None else ""), field="key")
        return ref

    # -- checking ----------------------------------------------------------------------
    def check(self, text: str, subject: str | None = None) -> CheckResult:
        """Which stored facts `text` contradicts, what to update, which are stale already.

        Compared with the memories of `subject` (or the MemWatch's subject); with neither,
        with every subject's. Nothing is stored.
        """
        return check_text(text, self.config, overlay_path=str(self.store.path), subject=self._subject(subject),
                          as_of=self.clock(), detector=self.detector)

    def apply(self, result: CheckResult) -> list[str]:
        """Carry out a check's suggestions on facts stored through this API (UPDATE sets the new
        value, EXPIRE erases the fact); facts of other sources are left to their own store.
        Returns the refs changed."""
        return apply_updates(self.store, self.config, result, now=self.clock(), detector=self.detector)

    # -- overview ------------------------------------------------------------------------
    def _native_id(self) -> int | None:
        row = self.store.source_row(NATIVE_SOURCE)
        return row["id"] if row else None

    def report(self) -> list[Memory]:
        """Every fact stored through the API, scored now, stalest first."""
        source_id = self._native_id()
        if source_id is None:
            return []
        self.engine.rescore(self.clock(), [source_id])
        rows = self.store.iter_fact_rows([source_id], include_deleted=False, order="f.freshness, f.id")
        return [Memory.from_row(r) for r in rows]

    def stats(self) -> dict:
        """Counts per label (and per category) of the API's facts, scored now."""
        source_id = self._native_id()
        ids = [] if source_id is None else [source_id]
        if ids:
            self.engine.rescore(self.clock(), ids)
        return {**self.store.summary(ids), "by_category": self.store.summary(ids, group_by="category")}

    def search(self, query: str, limit: int = 10, subject: str | None = None) -> list:
        """Facts of `subject` (or the MemWatch's; with neither, of every subject), every source,
        ranked by relevance x freshness x confidence (see overlay.search)."""
        from memwatch_overlay.overlay.engine.search import search_facts
        from memwatch_overlay.overlay.store.database import ANY
        chosen = self._subject(subject)
        return search_facts(self.store, self.engine, query, limit=limit, as_of=self.clock(),
                            subject=ANY if chosen is None else chosen)
