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
from dataclasses import dataclass, field

from ..rules.categorize import Categorizer
from ..rules.config import Config
from .audit import open_overlay
from .contradictions import Detector, FactView
from .detect_changed import fact_view, make_detector
from .store import LIVE
from .sync import SyncEngine
from .timeparse import to_iso

STALE_LABELS = ("stale", "expired")
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

    def as_dict(self) -> dict:
        return {"text": self.text, "subject": self.subject, "as_of": to_iso(self.as_of),
                "categories": self.categories, "compared": self.compared,
                "contradictions": self.contradictions, "stale": self.stale, "summary": self.line}


def check_text(text: str, config: Config | None = None, *, overlay_path: str | None = None,
               subject: str | None = None, as_of: float | None = None,
               detector: Detector | None = None) -> CheckResult:
    """Contradictions and stale memories that ``text`` reveals among the overlay's facts."""
    cfg = config or Config()
    as_of = time.time() if as_of is None else as_of
    detector = detector or make_detector(cfg) or Detector()
    categorizer = Categorizer(cfg.rules, known=set(cfg.categories))
    cats = {categorizer.categorize(None, None, text, None)}
    cats |= {s.category for s in detector.extract(text)}
    categories = sorted(cats)
    store = open_overlay(config, overlay_path)
    try:
        sql = (f"SELECT f.*, s.name AS source_name FROM facts f JOIN sources s ON s.id = f.source_id "
               f"WHERE f.{LIVE} AND f.category IN ({', '.join('?' * len(categories))})")
        params: list = list(categories)
        if subject is not None:
            sql += " AND f.subject = ?"
            params.append(subject)
        rows = store.conn.execute(sql + " ORDER BY f.id", params).fetchall()
        result = CheckResult(text, subject, as_of, categories, compared=len(rows))
        newer = FactView(CHECK_REF, subject, None, text, categories[0], as_of)
        by_ref = {r["ref"]: r for r in rows}
        olders = [fact_view(r) for r in rows]
        found = detector.compare(newer, [o for o in olders if o.learned_at <= as_of])
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
