"""`check`: does a new utterance contradict what the overlay holds about its subject?

The utterance is not stored. It is compared, as a would-be newer fact, with the live facts
of its subject in each category (the detector's blocking rule: same subject and category
only), and the result says which facts it contradicts, what to do about each (UPDATE to
a new value, or EXPIRE when the new value is unknown) and which of the subject's facts
are already stale or expired. Shared by `MemWatch.check`, `memwatch-overlay check` and
the MCP tool `check_utterance`.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

from .audit import fact_dict
from .errors import OverlayError
from .store import OverlayStore
from .sync import SyncEngine

UTTERANCE_REF = "utterance"
STALE_LABELS = ("stale", "expired")
RESCORE_CHUNK = 900   # ids per `IN (…)`: well under SQLite's bound-variable limit


def load_detector(use_embeddings: bool = False):
    """The contradiction detector (overlay.contradictions); OverlayError when this build lacks it."""
    try:
        from .contradictions import Detector
    except ImportError:
        raise OverlayError("contradiction detection (overlay.contradictions) is not installed in this "
                           "build of memwatch-overlay") from None
    if use_embeddings:
        try:
            return Detector(use_embeddings=True)
        except TypeError:
            raise OverlayError("this detector has no embeddings mode; use use_embeddings=False") from None
    return Detector()


@dataclass(frozen=True)
class SuggestedUpdate:
    """What to do with a fact the utterance contradicts."""

    action: str                 # "UPDATE" (new value known) | "EXPIRE" (the old value no longer holds)
    ref: str
    key: str | None
    old_value: str
    new_value: str | None
    category: str
    confidence: float
    reason: str

    def __str__(self) -> str:
        name = self.key or self.ref
        if self.action == "UPDATE":
            return f"UPDATE {name}: {self.old_value!r} -> {self.new_value!r}"
        return f"EXPIRE {name}: {self.old_value!r} ({self.reason})"


@dataclass(frozen=True)
class FoundContradiction:
    """A stored fact the utterance contradicts."""

    ref: str
    key: str | None
    old_value: str
    category: str
    kind: str
    confidence: float
    evidence: str


@dataclass
class CheckResult:
    text: str
    subject: str | None
    as_of: float
    contradictions: list[FoundContradiction] = field(default_factory=list)
    suggested_updates: list[SuggestedUpdate] = field(default_factory=list)
    stale_memories: list[dict] = field(default_factory=list)   # audit-JSON fact dicts, stalest first

    @property
    def summary(self) -> str:
        return (f"{len(self.contradictions)} contradiction(s) detected. "
                f"{len(self.stale_memories)} stale memories.")

    def to_dict(self) -> dict:
        return {"text": self.text, "subject": self.subject, "summary": self.summary,
                "contradictions": [asdict(c) for c in self.contradictions],
                "suggested_updates": [asdict(u) for u in self.suggested_updates],
                "stale_memories": self.stale_memories}


def fact_view(row, category: str | None = None):
    """A stored fact as the detector sees it."""
    from .contradictions import FactView
    times = [t for t in (row["created_at"], row["updated_at"], row["refreshed_at"]) if t is not None]
    return FactView(ref=row["ref"], subject=row["subject"], key=row["key"], text=row["text"],
                    category=category or row["category"], learned_at=max(times) if times else row["first_seen"])


def keyed_reading(detector, said, old, as_of: float):
    """A keyed fact (key `employer`, text `Google`) and the utterance read as the same key.

    Free text ("my new job at Anthropic") carries slots; a key-value memory carries its
    slot in the key. For each value the utterance asserts for the key's slot, the
    detector compares `employer = Anthropic` with `employer = Google` by its own
    key-value rule. Returns compare()'s arguments: (the utterance as key = value, [old]).
    """
    from .contradictions import FactView
    slot = detector.pack.slot_for_key(old.key)
    values = [s.raw for s in said if slot is not None and s.name == slot.name
              and s.kind == "assert" and s.polarity > 0 and s.raw]
    if not values:
        return FactView(UTTERANCE_REF, old.subject, old.key, "", old.category, as_of), []
    return FactView(UTTERANCE_REF, old.subject, old.key, values[0], old.category, as_of), [old]


def rescore_subject(store: OverlayStore, engine: SyncEngine, subject: str | None, as_of: float) -> None:
    ids = [r[0] for r in store.conn.execute(
        "SELECT id FROM facts WHERE subject IS ? AND status IN ('active', 'contradicted')", (subject,))]
    for i in range(0, len(ids), RESCORE_CHUNK):
        engine.rescore(as_of, fact_ids=ids[i:i + RESCORE_CHUNK])


def check_utterance(store: OverlayStore, engine: SyncEngine, detector, text: str,
                    subject: str | None = None, as_of: float | None = None) -> CheckResult:
    """Compare `text` with the live facts of `subject`; nothing is written but fresh scores."""
    from .contradictions import FactView
    as_of = time.time() if as_of is None else as_of
    rescore_subject(store, engine, subject, as_of)
    rows = store.find_facts(subject=subject)
    result = CheckResult(text=text, subject=subject, as_of=as_of,
                         stale_memories=[fact_dict(r) for r in rows if r["label"] in STALE_LABELS])
    by_ref = {r["ref"]: r for r in rows}
    blocks: dict[str, list] = {}
    for r in rows:
        blocks.setdefault(r["category"], []).append(r)
    best: dict[str, object] = {}

    def keep(found):
        for c in found:
            ref = getattr(c.older, "ref", c.older)
            if ref in by_ref and (ref not in best or c.confidence > best[ref].confidence):
                best[ref] = c

    said = None
    for category, block in blocks.items():
        olders = [fact_view(r) for r in block]
        keep(detector.compare(FactView(ref=UTTERANCE_REF, subject=subject, key=None, text=text,
                                       category=category, learned_at=as_of), olders))
        for old in olders:
            if old.ref in best or not old.key:
                continue
            said = detector.extract(text) if said is None else said
            keep(detector.compare(*keyed_reading(detector, said, old, as_of)))
    for ref in sorted(best, key=lambda r: (by_ref[r]["category"], r)):
        c, row = best[ref], by_ref[ref]
        result.contradictions.append(FoundContradiction(
            ref=ref, key=row["key"], old_value=row["text"], category=row["category"], kind=c.kind,
            confidence=round(float(c.confidence), 3), evidence=c.evidence))
        update = c.update or {}
        new_value = update.get("new_value")
        result.suggested_updates.append(SuggestedUpdate(
            action=update.get("action") or ("UPDATE" if new_value else "EXPIRE"), ref=ref, key=row["key"] or update.get("key"),
            old_value=row["text"], new_value=new_value or None, category=row["category"],
            confidence=round(float(c.confidence), 3), reason=c.evidence))
    return result
