"""Reading the self-written JSON Lines corpora of tools/ (pair_corpus, aspect_corpus,
manner_corpus): one JSON object a line, blank lines ignored."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def unique_texts(rows: Iterable[dict]) -> tuple[dict, ...]:
    """The rows in order, each ``text`` once (its first row kept)."""
    seen: set[str] = set()
    return tuple(r for r in rows if not (r["text"] in seen or seen.add(r["text"])))
