"""Reference implementations for the equality tests of the sync's hot path.

What overlay/engine/scoring.py, overlay/engine/sync.py and connectors/tabular.py computed before their
hot paths were rewritten (main at bf0e46d), written out plainly: the design's formula,
score_fact calling freshness() / days_until_below() / label_for() one by one with builtin
round(), confidence, the fact row of a record, its content hash, key and ref, and the
row -> Record mapping of SQL connectors. The fast code must give the same values, to the bit.
"""
from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from memwatch_overlay.connectors.base import Record
from memwatch_overlay.connectors.paths import get_path
from memwatch_overlay.overlay.engine.scoring import DAY, Thresholds
from memwatch_overlay.core.timeparse import parse_timestamp

CEILING = 0.99


# -- the reference: the formula as written, nothing shared, nothing inlined ----------------
def ref_decay_factor(half_life_days):
    return 0.5 ** (1.0 / half_life_days)


def design_freshness(days_since_learned, half_life_days, access_count=0, days_since_access=None):
    """DESIGN.md: min(1, d**age + ln(1 + n) * 0.05 + 0.1 * d**since_access), ages below 0 as 0."""
    d = ref_decay_factor(half_life_days)
    base_score = d ** max(0.0, days_since_learned)
    access_boost = math.log1p(max(0, access_count or 0)) * 0.05
    recency_boost = 0.1 * d ** max(0.0, days_since_access) if days_since_access is not None else 0.0
    return min(1.0, base_score + access_boost + recency_boost)


def ref_label(value, th):
    if value >= th.fresh:
        return "fresh"
    if value >= th.aging:
        return "aging"
    if value >= th.stale:
        return "stale"
    return "expired"


def ref_days_until_below(threshold, days_since_learned, half_life_days, access_count=0, days_since_access=None):
    d = ref_decay_factor(half_life_days)
    log_d = math.log(d)
    boost = math.log1p(max(0, access_count or 0)) * 0.05
    decaying = d ** max(0.0, days_since_learned)
    if days_since_access is not None:
        decaying += 0.1 * d ** max(0.0, days_since_access)
    if threshold - boost <= 0:
        return None
    if decaying + boost < threshold:
        return 0.0
    return max(0.0, math.log((threshold - boost) / decaying) / log_d)


def ref_confidence(policy, as_of, confirmed_at, confirmations=0):
    days = max(0.0, (as_of - confirmed_at) / DAY) if confirmed_at is not None else 0.0
    start = policy.initial + (CEILING - policy.initial) * (1.0 - 0.5 ** max(0, confirmations or 0))
    start = min(CEILING, start)
    return round(max(policy.floor, start * 0.5 ** (days / policy.half_life_days)), 6)


def reference_score(as_of, learned_at, policy, thresholds=Thresholds(), access_count=0, accessed_at=None,
                    expires_at=None, confidence=None) -> tuple:
    """score_fact before the rewrite, as a plain tuple in Score's field order."""
    age = max(0.0, (as_of - learned_at) / DAY) if learned_at is not None else 0.0
    since_access = max(0.0, (as_of - accessed_at) / DAY) if accessed_at is not None else None
    hl = policy.half_life_days
    value = round(design_freshness(age, hl, access_count, since_access), 9)
    label = ref_label(value, thresholds)
    days_left = ref_days_until_below(thresholds.fresh, age, hl, access_count, since_access)
    until_expired = ref_days_until_below(thresholds.stale, age, hl, access_count, since_access)
    if label == "fresh":
        next_change = days_left
    elif label == "aging":
        next_change = ref_days_until_below(thresholds.aging, age, hl, access_count, since_access)
    elif label == "stale":
        next_change = until_expired
    else:
        next_change = None
    hard_limits = []
    if policy.ttl_days is not None:
        hard_limits.append(("ttl", policy.ttl_days - age))
    if expires_at is not None:
        hard_limits.append(("source", (expires_at - as_of) / DAY))
    expired_by = None
    for reason, remaining in hard_limits:
        remaining = max(0.0, remaining)
        days_left = remaining if days_left is None else min(days_left, remaining)
        until_expired = remaining if until_expired is None else min(until_expired, remaining)
        if remaining <= 0.0 and expired_by is None:
            expired_by = reason
        if label != "expired":
            next_change = remaining if next_change is None else min(next_change, remaining)
    if expired_by is not None:
        label = "expired"
        next_change = None
    return (round(value, 6), label, round(age, 6), None if days_left is None else round(days_left, 3),
            None if until_expired is None else round(until_expired, 3), expired_by, confidence, next_change)


def same(a, b) -> bool:
    """Equal field by field, with the same type and bits (repr of a float round-trips)."""
    return tuple(a) == tuple(b) and repr(tuple(a)) == repr(tuple(b))


# -- overlay/engine/sync.py ------------------------------------------------------------------------
LIVE_STATUSES = ("active", "contradicted")


def ref_content_hash(rec: Record) -> str:
    parts = (rec.text, rec.key, rec.subject, rec.category, rec.created_at, rec.updated_at,
             rec.expires_at, rec.status)
    h = hashlib.blake2b(digest_size=12)
    for p in parts:
        h.update(repr(p).encode("utf-8", "replace"))
        h.update(b"\x1f")
    return h.hexdigest()


def ref_pk_json(pk: dict) -> str:
    return json.dumps(pk)


def ref_make_ref(source: str, table: str, pk: dict) -> str:
    return ":".join([source, table, *[str(v) for v in pk.values()]])


def ref_learned_at(rec: Record):
    times = [t for t in (rec.created_at, rec.updated_at) if t is not None]
    return max(times) if times else None


def ref_next_change_at(as_of: float, next_change_days, now: float):
    if next_change_days is None:
        return None
    if as_of > now + 1.0:
        return 0.0
    return as_of + next_change_days * DAY


def ref_engine_score(config, category, learned_at, as_of, access_count, accessed_at, expires_at,
                     confirmed_at=None, confirmations=0) -> tuple:
    """SyncEngine.score: score_fact with the confidence of the lifecycle policy."""
    confirmed_at = learned_at if confirmed_at is None else confirmed_at
    return reference_score(as_of, learned_at, config.policy(category), config.thresholds, access_count,
                           accessed_at, expires_at,
                           confidence=ref_confidence(config.lifecycle, as_of, confirmed_at, confirmations))


def ref_score_row(config, row, as_of: float) -> tuple:
    """SyncEngine.score_row: a refresh and the first sighting count as learning."""
    times = [t for t in (row["created_at"], row["updated_at"], row["refreshed_at"]) if t is not None]
    if not times:
        times.append(row["first_seen"])
    return ref_engine_score(config, row["category"], max(times), as_of, row["access_count"], row["accessed_at"],
                            row["expires_at"], max(times), row["confirmations"])


def ref_fact_row(engine, rec: Record, source_id: int, sync_no: int, now: float, as_of: float) -> tuple:
    """SyncEngine._fact_row: the facts row upsert_facts() takes for one record."""
    given = rec.category or None            # facts.category_given: what the source gave
    category = engine.categorizer.categorize(rec.source, rec.key, rec.text, rec.category)
    rec.category = category
    learned = ref_learned_at(rec)
    s = ref_engine_score(engine.config, category, learned if learned is not None else now, as_of,
                         rec.access_count, rec.accessed_at, rec.expires_at)
    freshness, label, age_days, days_left, days_until_expired, expired_by, confidence, next_days = s
    nxt = ref_next_change_at(as_of, next_days, now) if rec.status in LIVE_STATUSES else None
    return (source_id, rec.table, ref_pk_json(rec.pk), ref_make_ref(rec.source, rec.table, rec.pk), rec.subject,
            rec.key, rec.text, category, given, rec.created_at, rec.updated_at, rec.accessed_at, rec.access_count,
            rec.expires_at, ref_content_hash(rec), now, now, sync_no, sync_no, rec.status,
            freshness, label, age_days, days_left, days_until_expired, expired_by, as_of, confidence, nxt)


# -- connectors/tabular.py ------------------------------------------------------------------
TIME_FIELDS = ("created_at", "updated_at", "accessed_at", "expires_at")


def ref_row_to_record(conn, row: dict, pks: list, mapping: dict) -> Record | None:
    """TableConnector.row_to_record: one SQL row mapped column by column to a Record."""
    def field(key: str) -> Any:
        if key not in mapping:
            return None
        col, path = mapping[key]
        value = row.get(col)
        return get_path(value, path) if path else value

    text = field("text")
    if isinstance(text, (bytes, bytearray)):
        text = text.decode("utf-8", "replace")
    if text is None or (isinstance(text, str) and not text.strip()):
        return None
    pk = {p: _pk_text(row.get(p)) for p in pks}
    times = {}
    last_raw = last = None
    for key in TIME_FIELDS:
        raw = field(key)
        if raw is None:
            times[key] = None
            continue
        if raw == last_raw and raw.__class__ is last_raw.__class__:
            times[key] = last
            continue
        try:
            last = parse_timestamp(raw)
        except ValueError:
            conn.warn(f"{conn.table_name} {pk}: {key} {raw!r} is not a timestamp; ignored")
            last = None
        last_raw = raw
        times[key] = last
    count = field("access_count")
    try:
        count = int(count or 0)
    except (TypeError, ValueError):
        count = 0
    return Record(source=conn.source.name, table=conn.table_name, pk=pk,
                  text=text if isinstance(text, str) else str(text),
                  subject=_opt_text(field("subject")), key=_opt_text(field("key")),
                  category=_opt_text(field("category")), access_count=count, **times)


def _pk_text(value: Any) -> str:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    return "" if value is None else str(value)


def _opt_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8", "replace")
    value = str(value) if not isinstance(value, str) else value
    return value or None
