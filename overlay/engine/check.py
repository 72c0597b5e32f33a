"""`check TEXT`: compare one utterance with what the overlay knows and suggest updates.

The utterance is treated as the newest fact of ``subject`` (any subject when none is
given). It is compared with the live facts of the categories it may belong to (the
config's category rules, plus the categories of the slots the detector reads in it), as
the sync engine would compare a new row with its block. Nothing is written.

Example:
    result = check_text("I just joined Stripe", config, subject="u_priya")
    print(result.line)       # "1 contradiction(s) detected. 0 stale memories."
"""
from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from memwatch_overlay.rules.categorize import Categorizer
from memwatch_overlay.rules.config import Config
from memwatch_overlay.overlay.engine.audit import open_overlay
from memwatch_overlay.overlay.detect.detector import Detector, FactView
from memwatch_overlay.overlay.detect.blocks import fact_view, make_detector
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.core.timeparse import to_iso
from memwatch_overlay.core.vocab import Label, Status

STALE_LABELS = (Label.STALE.value, Label.EXPIRED.value)
CHECK_REF = "check"


@dataclass
class CheckResult:
    text: str
    subject: str | None
    as_of: float
    categories: list[str]
    compared: int = 0
    contradictions: list[dict] = field(default_factory=list)
    stale: list[dict] = field(default_factory=list)

    @property
    def line(self) -> str:
        """The closing line, in the seed's words."""
        return (f"{len(self.contradictions)} contradiction(s) detected. "
                f"{len(self.stale)} stale memories.")

    summary = line                  # the memwatch API's name

    @property
    def stale_memories(self) -> list[dict]:
        return self.stale

    @property
    def suggested_updates(self) -> list[SuggestedUpdate]:
        """One UPDATE or EXPIRE per contradicted memory, most confident first."""
        out = []
        for c in self.contradictions:
            u = c["update"]
            out.append(SuggestedUpdate(
                action=u.get("action") or ("UPDATE" if u.get("new_value") else "EXPIRE"), ref=c["older"],
                key=u.get("key"), old_value=c["older_text"], new_value=u.get("new_value"),
                confidence=c["confidence"], reason=c["evidence"]))
        return out

    def as_dict(self) -> dict:
        return {"text": self.text, "subject": self.subject, "as_of": to_iso(self.as_of),
                "categories": self.categories, "compared": self.compared,
                "contradictions": self.contradictions, "stale": self.stale, "summary": self.line,
                "suggested_updates": [u.to_dict() for u in self.suggested_updates]}


def keyed_contradictions(detector: Detector, text: str, newer: FactView, olders: list[FactView],
                         done: set[str]) -> list:
    """Compare key-value memories (key `employer`, text `Google`) with what `text` says for that key.

    Free text ("my new job at Anthropic") carries slots; a key-value memory carries its
    slot in its key, and its text alone ("Google") reads as no slot. For each such
    memory, the values `text` asserts for the key's slot are compared with it as
    `employer = Anthropic` vs `employer = Google`, by the detector's own key-value rule.
    """
    said = None
    found = []
    for old in olders:
        if old.ref in done or not old.key or old.learned_at > newer.learned_at:
            continue
        slot = detector.pack.slot_for_key(old.key)
        if slot is None:
            continue
        said = detector.extract(text) if said is None else said
        values = [s.raw for s in said if s.name == slot.name and s.kind == "assert" and s.polarity > 0 and s.raw]
        if values:
            keyed = FactView(newer.ref, newer.subject, old.key, values[0], old.category, newer.learned_at)
            found += detector.compare(keyed, [old])
    return found


@dataclass(frozen=True, eq=False)
class SuggestedUpdate(Mapping):
    """What to do with a memory the text contradicts (from the detector's `update`).

    Both an object (``u.action``, ``u.key``) and a read-only mapping, as memwatch's
    users index it: ``u["action"]``, ``u["memory_key"]`` (= ``key``), ``u["old_value"]``.

    Example:
        >>> u = SuggestedUpdate("UPDATE", "memwatch:facts:city", "city", "Jakarta", "Surabaya", 0.85, "city")
        >>> u["memory_key"], u["old_value"], u.new_value
        ('city', 'Jakarta', 'Surabaya')
        >>> u
        {'action': 'UPDATE', 'memory_key': 'city', 'old_value': 'Jakarta', 'new_value': 'Surabaya', 'confidence': 0.85}
        >>> print(u)
        UPDATE city: 'Jakarta' -> 'Surabaya'
    """

    action: str                 # "UPDATE" (new value known) | "EXPIRE" (the old value no longer holds)
    ref: str
    key: str | None
    old_value: str
    new_value: str | None
    confidence: float
    reason: str

    # the memwatch README's spelling first (what repr shows), then the rest
    SHOWN = ("action", "memory_key", "old_value", "new_value", "confidence")
    KEYS = SHOWN + ("key", "ref", "reason")

    def __getitem__(self, name: str):
        if name == "memory_key":
            return self.key
        if name in self.KEYS:
            return getattr(self, name)
        raise KeyError(name)

    def __iter__(self):
        return iter(self.KEYS)

    def __len__(self) -> int:
        return len(self.KEYS)

    def __eq__(self, other) -> bool:
        if isinstance(other, SuggestedUpdate):
            return all(getattr(self, f.name) == getattr(other, f.name) for f in fields(self))
        return Mapping.__eq__(self, other)

    __hash__ = None             # type: ignore[assignment]  # a mapping: unhashable, like dict

    def __repr__(self) -> str:
        return repr({k: self[k] for k in self.SHOWN})

    def to_dict(self) -> dict:
        return {k: self[k] for k in self.KEYS}

    def __str__(self) -> str:
        name = self.key or self.ref
        if self.action == "UPDATE":
            return f"UPDATE {name}: {self.old_value!r} -> {self.new_value!r}"
        return f"EXPIRE {name}: {self.old_value!r} ({self.reason})"


def check_text(text: str, config: Config | None = None, *, overlay_path: str | None = None,
               subject: str | None = None, as_of: float | None = None,
               detector: Detector | None = None) -> CheckResult:
    """Contradictions and stale memories that ``text`` reveals among the overlay's facts."""
    cfg = config or Config()
    as_of = time.time() if as_of is None else as_of
    detector = detector or make_detector(cfg) or Detector()
    categorizer = Categorizer(cfg.rules, known=set(cfg.categories), aliases=cfg.category_aliases)
    cats = {categorizer.categorize(None, None, text, None)}
    cats |= {s.category for s in detector.extract(text)}
    categories = sorted(cats)
    store = open_overlay(config, overlay_path)
    try:
        rows = store.live_facts_in(categories, subject)
        # suggestions only against facts nothing has outdated yet: a memory already
        # contradicted by a newer one (Google, replaced by Stripe) gets no second one
        current = [r for r in rows if r["status"] != Status.CONTRADICTED.value]
        result = CheckResult(text, subject, as_of, categories, compared=len(current))
        newer = FactView(CHECK_REF, subject, None, text, categories[0], as_of)
        by_ref = {r["ref"]: r for r in current}
        olders = [fact_view(r) for r in current]
        # key-value memories first, by the key-value rule (their own key and value); the
        # detector reads the others (and would read a key-value memory as its key's slot too)
        found = keyed_contradictions(detector, text, newer, olders, set())
        keyed = {c.older for c in found}
        found += detector.compare(newer, [o for o in olders if o.learned_at <= as_of and o.ref not in keyed])
        for c in sorted(found, key=lambda c: (-c.confidence, c.older)):
            upd = dict(c.update or {})
            upd["ref"] = c.older
            result.contradictions.append({
                "older": c.older, "older_text": by_ref[c.older]["text"], "newer": CHECK_REF,
                "kind": c.kind, "confidence": c.confidence, "evidence": c.evidence, "update": upd})
        engine = SyncEngine(store, cfg)
        for r in rows:
            s = engine.score_row(r, as_of)
            if s.label in STALE_LABELS:
                result.stale.append({"ref": r["ref"], "text": r["text"], "label": s.label,
                                     "freshness": round(s.freshness, 4)})
        return result
    finally:
        store.close()
