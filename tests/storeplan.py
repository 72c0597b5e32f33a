"""What the framework-written test stores hold: three users, planted contradictions, TTL items, traps.

One plan for every framework (tests/frameworkstores.py writes it through each framework's
own API; tests/fixtures/make_crewai.py for the committed CrewAI store). Its traps:
- the same kind of fact for different users (Erin's old "works at Google", Farid's newer
  "works at Stripe"; Erin's Lisbon, Chen's newer Singapore): never a contradiction, since
  facts of different subjects are never compared;
- real contradictions within one user (`contradicted_by`);
- TTL items for stores with a native expiry (`ttl_days`): one expired at REFERENCE, one not;
- an item the framework updates in place (UPDATED_ITEM) and one it deletes (DELETED_ITEM).
Ages are relative to REFERENCE: audit with `--as-of` REFERENCE_ISO.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import math
import re
from dataclasses import dataclass

REFERENCE = dt.datetime(2026, 11, 29, 12, 0, 0, tzinfo=dt.timezone.utc)
REFERENCE_ISO = "2026-11-29T12:00:00Z"
USERS = ("u_erin", "u_farid", "u_chen")
EMBED_DIM = 32


@dataclass(frozen=True)
class Planted:
    item: str
    user: str
    category: str
    text: str             # the memory as a fact store keeps it
    utterance: str        # what the user said (conversation logs)
    age_days: float
    contradicted_by: str | None = None
    ttl_days: float | None = None   # stores with a native TTL

    @property
    def expired(self) -> bool:
        """Past its TTL at REFERENCE (for stores that keep one)."""
        return self.ttl_days is not None and self.ttl_days < self.age_days

    def at(self, reference: dt.datetime = REFERENCE) -> dt.datetime:
        return reference - dt.timedelta(days=self.age_days)


ITEMS = (
    Planted("f.allergy", "u_farid", "fact", "User is allergic to peanuts.", "I'm allergic to peanuts.", 800),
    Planted("f.loc.old", "u_farid", "location", "User lives in Toronto.", "I live in Toronto.", 700,
            contradicted_by="f.loc.new"),
    Planted("c.email.old", "u_chen", "contact", "User's email address is chen.wei@example.com.",
            "My email address is chen.wei@example.com.", 600, contradicted_by="c.email.new"),
    Planted("e.emp.old", "u_erin", "employment", "User works at Google as a data analyst.",
            "I work at Google as a data analyst.", 400, contradicted_by="e.emp.new"),
    Planted("e.city", "u_erin", "location", "User lives in Lisbon.", "I live in Lisbon.", 200),
    Planted("f.emp", "u_farid", "employment", "User works at Stripe on the payments team.",
            "I work at Stripe on the payments team.", 90),
    Planted("c.loc", "u_chen", "location", "User lives in Singapore.", "I live in Singapore.", 60),
    Planted("c.violin", "u_chen", "skill", "User plays the violin in a community orchestra.",
            "I play the violin in a community orchestra.", 50),
    Planted("f.loc.new", "u_farid", "location", "User moved to Vancouver last month.",
            "I moved to Vancouver last month.", 30),
    Planted("c.email.new", "u_chen", "contact", "User's new email is chen@example.net; the old address was closed.",
            "My new email is chen@example.net; the old address was closed.", 20),
    Planted("e.seat", "u_erin", "preference", "User prefers window seats on flights.",
            "I prefer window seats on flights.", 12),
    Planted("e.trip", "u_erin", "general", "User wants restaurant ideas for a trip this weekend.",
            "I want restaurant ideas for my trip this weekend.", 10, ttl_days=3),
    Planted("e.emp.new", "u_erin", "employment", "User just joined Stripe as a backend engineer.",
            "I just joined Stripe as a backend engineer.", 5),
    Planted("c.remind", "u_chen", "general", "User asked to be reminded about the dentist appointment.",
            "Remind me about the dentist appointment.", 1, ttl_days=7),
)
BY_ID = {p.item: p for p in ITEMS}
UPDATED_ITEM, UPDATED_TEXT = "c.violin", "User plays the cello in a community orchestra."
DELETED_ITEM = "f.allergy"
CONTRADICTIONS = {(p.item, p.contradicted_by) for p in ITEMS if p.contradicted_by}


def of(user: str) -> list[Planted]:
    return [p for p in ITEMS if p.user == user]


def by_age() -> list[Planted]:
    """Oldest first: the order a store would have learned them in."""
    return sorted(ITEMS, key=lambda p: -p.age_days)


def embed(text: str, dim: int = EMBED_DIM) -> list[float]:
    """A deterministic embedding (hashed bag of words): no model, no network."""
    vec = [0.0] * dim
    for word in re.findall(r"\w+", text.lower()):
        h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big")
        vec[h % dim] += 1.0 if (h >> 16) & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


def embed_batch(texts: list[str]) -> list[list[float]]:
    return [embed(t) for t in texts]


def manifest(framework: str, packages: dict, sources: dict[str, dict]) -> dict:
    """The manifest of a committed store: where each planted item lives and what is expected."""
    return {
        "framework": framework, "packages": packages, "reference_time": REFERENCE_ISO,
        "items": [{"item_id": p.item, "user": p.user, "text": UPDATED_TEXT if p.item == UPDATED_ITEM else p.text,
                   "category": p.category, "age_days": p.age_days, "source": sources[p.item],
                   "deleted": p.item == DELETED_ITEM,
                   "contradicted_by": p.contradicted_by} for p in ITEMS if p.item in sources],
    }
