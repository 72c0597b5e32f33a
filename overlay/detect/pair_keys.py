"""The cache key of one (older, newer) question, shared by the judge's and the pair
encoder's verdict caches (kept apart from judge.py: reading it loads no HTTP client)."""
from __future__ import annotations

import hashlib


def pair_key(older: str, newer: str) -> str:
    """The cache key of one question: a hash of both texts (the prompt is fixed per release)."""
    data = f"{older}\x1f{newer}".encode("utf-8", "replace")
    return hashlib.blake2b(data, digest_size=12).hexdigest()
