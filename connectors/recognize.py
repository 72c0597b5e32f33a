"""Which kind of store is TARGET, and which preset maps it (zero-config audit, `init`)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from memwatch_overlay.core.errors import ConnectorError
from memwatch_overlay.core.redact import redact_dsn
from memwatch_overlay.rules.config import SourceConfig
from memwatch_overlay.connectors.base import TableInfo, require_readable_file
from memwatch_overlay.connectors.presets import Match
from memwatch_overlay.connectors.lancedb import describe_folder, folder_signature, is_lance_table, lance_tables
from memwatch_overlay.connectors.presets.generic import (CREATED_NAMES, TEXT_NAMES, UPDATED_NAMES, _pick,
                                                         optional_fields)
from memwatch_overlay.core.tomltext import toml_string
from memwatch_overlay.connectors.registry import preset_classes

SQLITE_MAGIC = b"SQLite format 3\x00"
# Heuristic presets: detection writes their mapping out in full instead of naming them.
GENERIC_PRESETS = ("generic", "generic-json", "generic-postgres")


class DescribedFolders(Protocol):
    """Where detect() keeps LanceDB folder descriptions between runs (the overlay's meta table:
    overlay/engine/audit.py). Describing a folder imports lancedb and opens every table, a
    second per audit; a description is kept under the folder with its `signature` (each
    table's latest manifest) and used while the signature holds."""

    def described(self, folder: str, signature: list) -> list[TableInfo] | None: ...

    def remember(self, folder: str, signature: list, tables: list[TableInfo]) -> None: ...


@dataclass
class Detection:
    kind: str                      # sqlite | json | postgres | lancedb
    target: str
    tables: list[TableInfo] = field(default_factory=list)
    matches: list[Match] = field(default_factory=list)   # best first


def kind_of(target: str) -> str:
    """sqlite | json | postgres | lancedb, from a DSN prefix, a file's header or its extension,
    or a folder holding LanceDB tables (`<table>.lance`)."""
    if target.startswith(("postgresql://", "postgres://")):
        return "postgres"
    path = Path(target)
    require_readable_file(path)
    if path.is_dir():
        if is_lance_table(path) or lance_tables(path):
            return "lancedb"
        raise ConnectorError(f"{target}: is a directory with no LanceDB table; give the store file, "
                             f"a postgresql:// DSN, or audit the folder's stores with `audit {target}`")
    with open(path, "rb") as fh:
        head = fh.read(len(SQLITE_MAGIC))
    if head == SQLITE_MAGIC:
        return "sqlite"
    if path.suffix.lower() in (".json", ".jsonl", ".ndjson") or head.lstrip()[:1] in (b"{", b"["):
        return "json"
    if path.suffix.lower() in (".db", ".sqlite", ".sqlite3"):
        raise ConnectorError(f"{target}: not a SQLite database (bad header)")
    raise ConnectorError(f"{target}: not a SQLite, JSON or JSONL file")


def detect(target: str, folders: DescribedFolders | None = None) -> Detection:
    """Describe TARGET and rank the presets that match it. `folders`: LanceDB descriptions
    kept from earlier runs (a folder whose tables are at the versions described is not opened)."""
    kind = kind_of(target)
    if kind == "sqlite":
        from memwatch_overlay.connectors.sqlite import list_tables, open_readonly
        conn = open_readonly(Path(target))
        try:
            tables = list_tables(conn)
        finally:
            conn.close()
    elif kind == "json":
        from memwatch_overlay.connectors.json_file import describe_file
        tables = describe_file(Path(target))
    elif kind == "lancedb":
        tables = _described_lance(Path(target), folders)
    else:
        try:
            from memwatch_overlay.connectors.postgres import describe_dsn
        except ImportError:
            raise ConnectorError(f"{redact_dsn(target)}: reading Postgres needs the [postgres] extra "
                                 "(pip install 'memwatch-overlay[postgres]')") from None
        tables = describe_dsn(target)
    matches = []
    for cls in preset_classes(kind):
        m = cls.match(tables)
        if m is not None:
            matches.append(m)
    matches.sort(key=lambda m: -m.score)
    return Detection(kind, target, tables, matches)


def _described_lance(path: Path, folders: DescribedFolders | None) -> list[TableInfo]:
    """describe_folder(path), or the description `folders` kept of it at the same versions
    (kept again when no table moved to a new version while it was described)."""
    signature = folder_signature(path) if folders is not None else None
    if signature is None:
        return describe_folder(path)
    folder = str(path.resolve())
    tables = folders.described(folder, signature)
    if tables is None:
        tables = describe_folder(path)
        if folder_signature(path) == signature:
            folders.remember(folder, signature, tables)
    return tables


def source_from_detection(det: Detection, name: str = "store") -> SourceConfig:
    """A SourceConfig for the best match; raises a ConnectorError with a mapping hint if none."""
    if not det.matches:
        raise ConnectorError(no_match_message(det)).with_hint(mapping_snippet(det))
    best = det.matches[0]
    values = dict(best.defaults)
    ids = values.pop("id", [])
    ids = [ids] if isinstance(ids, str) else list(ids)
    preset = None if best.preset in GENERIC_PRESETS else best.preset
    cfg = SourceConfig(name=name, connector=det.kind, preset=preset, id=ids, base_dir=Path.cwd(), **values)
    if det.kind == "postgres":
        cfg.dsn = det.target
    else:
        cfg.path = os.path.abspath(det.target)
    return cfg


SEEN_TABLES = 12     # tables named in the "no known agent store" message
# Tables no memory lives in: locks, migrations, sequences, schema bookkeeping.
_BOOKKEEPING = ("lock", "acquire", "migration", "sequence", "schema_version", "version", "config", "meta")


def no_match_message(det: Detection) -> str:
    shown = det.tables[:SEEN_TABLES]
    seen = "; ".join(f"{t.name}({', '.join(t.columns)})" for t in shown) or "no tables"
    if len(det.tables) > len(shown):
        seen += f"; ... and {len(det.tables) - len(shown)} more"
    return (f"{redact_dsn(det.target)}: no known agent store recognised (saw: {seen}); "
            f"map it in a memwatch.toml and pass --config")


def hint_table(tables: list[TableInfo]) -> TableInfo | None:
    """The table the mapping hint names: the likeliest to hold memories (a text-like and a
    time-like column, more columns), never a lock or bookkeeping table when another exists."""
    def rank(t: TableInfo):
        lowered = t.name.lower()
        bookkeeping = len(t.columns) <= 2 or any(word in lowered for word in _BOOKKEEPING)
        return (not bookkeeping, _pick(t.columns, TEXT_NAMES) is not None,
                _pick(t.columns, CREATED_NAMES) is not None, min(len(t.columns), 12))
    return max(tables, key=rank) if tables else None


def mapping_snippet(det: Detection) -> str:
    """The [[sources]] entry to write when detection fails, filled with what was seen."""
    target = redact_dsn(det.target)
    where = f"dsn = {toml_string(target)}" if det.kind == "postgres" else f"path = {toml_string(target)}"
    first = hint_table(det.tables)
    cols = first.columns if first else []
    lines = ["# memwatch.toml", "[[sources]]", 'name = "bot"', f"connector = {toml_string(det.kind)}", where]
    if det.kind == "json":
        lines += [f"records = {toml_string(first.name if first else '[*]')}          # which values are memories",
                  'text = "<field holding the memory text>"      # fields: ' + ", ".join(cols),
                  'created_at = "<field holding when it was written>"   # optional for JSON',
                  '# optional: id, subject, key, updated_at, accessed_at, access_count, category',
                  '# paths are relative to each record; see docs/json-sources.md']
        return "\n".join(lines)
    pk = (first.pk[0] if first and first.pk else (cols[0] if cols else "id"))
    text = _pick(cols, TEXT_NAMES)
    created = _pick(cols, CREATED_NAMES) or _pick(cols, UPDATED_NAMES, exclude={text} if text else ())
    lines += [f"table = {toml_string(first.name if first else 'my_table')}", f"id = {toml_string(pk)}",
              f"text = {toml_string(text or '<column holding the memory text>')}      # columns: "
              + ", ".join(c.replace(chr(10), " ") for c in cols),
              f"created_at = {toml_string(created or '<column holding when it was written>')}"]
    # what the column names make obvious (subject = "user_id", key, updated_at, ...)
    found = optional_fields(cols, used={c for c in (text, created) if c})
    lines += [f"{key} = {toml_string(col)}" for key, col in found.items()]
    rest = [k for k in ("subject", "key", "updated_at", "accessed_at", "access_count", "category") if k not in found]
    lines.append("# optional: " + ", ".join(rest + ["where"]))
    return "\n".join(lines)
