"""Every config field that scoring reads is in the fingerprint that makes the daemon resync.

A stored fact carries scores computed from the config (half-lives, TTLs, thresholds, the
confidence lifecycle). When one of those changes, `SyncEngine.fingerprint` must change
too, or a daemon keeps serving scores of the old config. Rather than a hand-kept list of
fields, the test records which fields of the scoring policies scoring really reads (the
sync's row builder, score_row on a stored fact, re-confirmed or not), then changes each
one alone and checks that the fingerprint moves.
"""
from __future__ import annotations

import dataclasses

import pytest

from memwatch_overlay.connectors.base import Record
from memwatch_overlay.overlay.engine.scoring import DAY, CategoryPolicy, ConfidencePolicy, Thresholds
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.rules.config import Config, SourceConfig

AS_OF = 1_780_000_000.0
POLICY_CLASSES = (Thresholds, CategoryPolicy, ConfidencePolicy)


def _recording(obj, log: set):
    """A copy of the frozen dataclass `obj` that notes each field read as (class, field)."""
    cls = type(obj)
    names = {f.name for f in dataclasses.fields(cls)}

    class Recording(cls):
        def __getattribute__(self, name):
            if name in names:
                log.add((cls, name))
            return super().__getattribute__(name)

    Recording.__name__ = f"Recording{cls.__name__}"
    return Recording(**{n: getattr(obj, n) for n in names})


def _config() -> Config:
    cfg = Config()
    cfg.categories = {**cfg.categories, "employment": CategoryPolicy(180, ttl_days=90)}
    return cfg


def _read_fields() -> set:
    log: set = set()
    cfg = _config()
    cfg.thresholds = _recording(cfg.thresholds, log)
    cfg.lifecycle = _recording(cfg.lifecycle, log)
    cfg.categories = {k: _recording(p, log) for k, p in cfg.categories.items()}
    engine = SyncEngine(store=None, config=cfg)
    build = engine._row_builder(source_id=1, sync_no=1, now=AS_OF, as_of=AS_OF)
    for key, text in (("employer", "Works at Acme"), (None, "likes tea")):
        build(Record(source="bot", table="t", pk={"id": "1"}, text=text, key=key,
                     created_at=AS_OF - 200 * DAY, access_count=3, accessed_at=AS_OF - DAY,
                     expires_at=AS_OF + 10 * DAY))
    stored = {"id": 1, "category": "employment", "created_at": AS_OF - 100 * DAY, "updated_at": None,
              "refreshed_at": None, "first_seen": AS_OF - 100 * DAY, "accessed_at": None,
              "access_count": 0, "expires_at": None, "confirmations": 0}
    engine.score_row(stored, AS_OF)
    engine.score_row({**stored, "refreshed_at": AS_OF - 5 * DAY, "confirmations": 2}, AS_OF)
    return log


READ = sorted(_read_fields(), key=lambda cf: (cf[0].__name__, cf[1]))


def test_scoring_reads_fields_of_every_policy():
    """A sanity check of the recording: thresholds, category policies and the lifecycle."""
    assert {cls for cls, _ in READ} == set(POLICY_CLASSES)
    assert (CategoryPolicy, "half_life_days") in READ and (Thresholds, "fresh") in READ


def _changed(value):
    return 30.0 if value is None else value * 0.9 + 0.013


def _with(cfg: Config, cls, name: str) -> Config:
    cfg = dataclasses.replace(cfg)
    if cls is Thresholds:
        cfg.thresholds = dataclasses.replace(cfg.thresholds, **{name: _changed(getattr(cfg.thresholds, name))})
    elif cls is ConfidencePolicy:
        cfg.lifecycle = dataclasses.replace(cfg.lifecycle, **{name: _changed(getattr(cfg.lifecycle, name))})
    else:
        p = cfg.categories["employment"]
        cfg.categories = {**cfg.categories,
                          "employment": dataclasses.replace(p, **{name: _changed(getattr(p, name))})}
    return cfg


@pytest.mark.parametrize("cls,name", READ, ids=[f"{c.__name__}.{n}" for c, n in READ])
def test_a_change_of_any_field_scoring_reads_changes_the_fingerprint(cls, name):
    source = SourceConfig(name="bot", connector="sqlite", path="bot.db", table="t")
    before = SyncEngine(None, _config()).fingerprint(source)
    assert SyncEngine(None, _with(_config(), cls, name)).fingerprint(source) != before, (
        f"{cls.__name__}.{name} changes scores but not SyncEngine.fingerprint: add it there")
