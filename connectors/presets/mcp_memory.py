"""The MCP reference memory server's knowledge graph (`memory.jsonl`).

The server (npm `@modelcontextprotocol/server-memory`) keeps JSON Lines:
`{"type":"entity","name","entityType","observations":[…]}` and
`{"type":"relation","from","to","relationType"}`. It stores no ids besides entity
names and no timestamps, and rewrites the whole file (temp file + rename) on every
change, so line numbers and list positions move.

Hence:
- one fact per observation, subject = entity name, table `observations`,
  pk = {"entity": name, "observation": <12-hex blake2b of the text>}: stable while the
  observation exists, whatever lines or observations are added or deleted around it
  (the server refuses duplicate observations within an entity, so the pair is unique);
- one fact per relation, table `relations`, subject = `from`, key = `relationType`,
  text "<from> <relation type with spaces> <to>", pk = {"from", "relation", "to"}
  (relations are memories too: "Priya works_at Google" goes stale like an observation);
- no timestamps, so the overlay ages each fact from when it first saw it.
The `{"entities": […], "relations": […]}` JSON that the server's read_graph returns
is read the same way.
"""
from __future__ import annotations

import hashlib
from typing import Iterator

from memwatch_overlay.connectors.base import Record
from memwatch_overlay.connectors.json_file import Document, JsonConnector
from memwatch_overlay.connectors.presets import Match

ENTITY_FIELDS = {"name", "entityType", "observations"}
RELATION_FIELDS = {"from", "to", "relationType"}


def observation_id(text: str) -> str:
    """The pk part naming one observation of an entity: a short hash of its text."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=6).hexdigest()


class McpMemoryGraph(JsonConnector):
    preset = "mcp-memory"
    kind = "json"
    description = "MCP memory server knowledge graph (JSONL entities with observations, relations)"
    # What `init` writes and the mapping documents; read() below implements it directly.
    defaults = dict(records="observations[*]", text="@", subject="^.name")
    fixed_mapping = True    # mapping keys in memwatch.toml do not change how this layout is read

    @classmethod
    def match(cls, tables):
        for t in tables:
            cols = set(t.columns)
            if t.name in ("$", "entities[*]") and ENTITY_FIELDS <= cols:
                reasons = [f"records {t.name!r} with fields name, entityType, observations "
                           f"(the MCP memory server's entities)"]
                if RELATION_FIELDS <= cols or any(RELATION_FIELDS <= set(o.columns) for o in tables):
                    reasons.append("relations with from, to, relationType")
                return Match(cls.preset, 1.0, reasons, dict(cls.defaults))
        return None

    def _compile(self) -> None:
        """The layout is fixed; mapping keys in memwatch.toml do not apply."""
        self._fields, self._ids, self._selector = {}, [], None

    def records_from(self, doc: Document) -> Iterator[Record]:
        value = doc.value
        if isinstance(value, dict) and isinstance(value.get("entities"), list):   # read_graph JSON
            items = list(value["entities"]) + list(value.get("relations") or [])
        elif isinstance(value, list):
            items = value
        else:
            items = [value]
        for item in items:
            if self.format == "json":
                self.rows_read += 1
            if not isinstance(item, dict):
                continue
            kind = item.get("type")
            if kind == "relation" or (kind is None and RELATION_FIELDS <= item.keys()):
                rec = self._relation(item)
                if rec is not None:
                    yield rec
            elif kind in (None, "entity"):
                yield from self._observations(item, doc)

    def _observations(self, entity: dict, doc: Document) -> Iterator[Record]:
        name = entity.get("name")
        observations = entity.get("observations")
        if not isinstance(name, str) or not isinstance(observations, list):
            return
        seen: set[str] = set()
        for i, text in enumerate(observations):
            if not isinstance(text, str) or not text.strip():
                continue
            oid = observation_id(text)
            if oid in seen:            # a hand-edited file may repeat an observation
                line = f":{doc.line}" if doc.line else ""
                self.warn(f"{self.path}{line}: entity {name!r} repeats observation {i}; kept once")
                continue
            seen.add(oid)
            yield Record(source=self.source.name, table="observations",
                         pk={"entity": name, "observation": oid}, text=text, subject=name)

    def _relation(self, rel: dict) -> Record | None:
        src, dst, kind = rel.get("from"), rel.get("to"), rel.get("relationType")
        if not all(isinstance(v, str) and v for v in (src, dst, kind)):
            return None
        return Record(source=self.source.name, table="relations",
                      pk={"from": src, "relation": kind, "to": dst},
                      text=f"{src} {kind.replace('_', ' ')} {dst}", subject=src, key=kind)
