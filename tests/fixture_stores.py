"""The fixture stores under tests/fixtures/agent-stores/, found from their folders.

Each folder holds the store files a framework's own code wrote, its `manifest.json` (what
was planted) and a `fixture.toml` (the preset detection must pick, the connector kind, the
store files). Tests parametrize over `FIXTURES` instead of keeping lists by hand: a new
preset is one fixture folder plus its preset module.
"""
from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path

AGENT_STORES = Path(__file__).parent / "fixtures" / "agent-stores"


@dataclass(frozen=True)
class FixtureStore:
    name: str                  # the folder's name ("langgraph", "mem0", ...)
    folder: Path
    preset: str                # what zero-config detection must pick
    kind: str                  # connector kind: sqlite | json | ...
    stores: tuple[str, ...]    # store files relative to the folder, each audited on its own
    min_category_matches: int | None = None
    subjects: bool = True      # False: the store has no user column (CrewAI 0.x)

    @property
    def manifest(self) -> dict:
        return json.loads((self.folder / "manifest.json").read_text())


def _load() -> dict[str, FixtureStore]:
    found = {}
    for spec in sorted(AGENT_STORES.glob("*/fixture.toml")):
        data = tomllib.loads(spec.read_text())
        found[spec.parent.name] = FixtureStore(
            name=spec.parent.name, folder=spec.parent, preset=data["preset"], kind=data["kind"],
            stores=tuple(data["stores"]), min_category_matches=data.get("min_category_matches"),
            subjects=data.get("subjects", True))
    return found


FIXTURES = _load()


def of_kind(kind: str) -> dict[str, FixtureStore]:
    return {n: f for n, f in FIXTURES.items() if f.kind == kind}
