"""A folder of stores: every recognised agent store under TARGET, each its own source.

memlife keeps one database per user (`data/<user>/memlife.db`), mem0 a history.db beside a
qdrant folder, CrewAI a LanceDB folder, an app may keep several. `audit data/` and
`init data/` walk the folder (sorted, hidden folders skipped, at most MAX_DEPTH levels and
MAX_FILES files) and keep every file or LanceDB folder a named preset recognises; a store
only the generic heuristics match is listed as skipped (audit it alone for a mapping hint).
What a recognised store keeps beside itself is not walked into: `<table>.lance` datasets,
mem0's qdrant folder, Chroma's segment folders.

Names are stable and need no config: the preset's name followed by the store's path in the
folder without the file suffix (`memlife-u_priya`, `langgraph-bots-support`), where a path
part equal to the preset's name is left out (`u_priya/memlife.db` -> `memlife-u_priya`).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from memwatch_overlay.core.errors import ConnectorError
from memwatch_overlay.connectors.lancedb import is_lance_table, lance_tables
from memwatch_overlay.connectors.recognize import GENERIC_PRESETS, Detection, detect

MAX_DEPTH = 6
MAX_FILES = 5000
# Folders a store keeps beside its main file, not stores of their own.
SIDE_FOLDERS = {"qdrant", "collection", "migrations_qdrant"}
STORE_SUFFIXES = (".db", ".sqlite", ".sqlite3", ".json", ".jsonl", ".ndjson")
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")
_UUID_DIR = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@dataclass
class FolderScan:
    folder: Path
    stores: list[tuple[Path, Detection]] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    truncated: bool = False


def _candidates(folder: Path):
    """Files and LanceDB folders under `folder`, in sorted order, bounded."""
    count = 0
    for root, dirs, files in os.walk(folder):
        here = Path(root)
        depth = len(here.relative_to(folder).parts)
        if lance_tables(here):
            yield here
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SIDE_FOLDERS
                         and not d.endswith(".lance") and not _UUID_DIR.match(d) and depth < MAX_DEPTH)
        for name in sorted(files):
            if name.startswith(".") or name.endswith(SQLITE_SIDE_FILES) or name.endswith(".tmp"):
                continue
            count += 1
            if count > MAX_FILES:
                raise _TooMany()
            yield here / name


class _TooMany(Exception):
    pass


def scan_folder(folder: Path, folders=None) -> FolderScan:
    """Recognise the stores under `folder` (see the module docstring). `folders`: detect()'s
    kept LanceDB descriptions (recognize.DescribedFolders)."""
    scan = FolderScan(folder)
    try:
        for path in _candidates(folder):
            if path.is_file() and path.suffix.lower() not in STORE_SUFFIXES and not _is_sqlite(path):
                continue
            try:
                det = detect(str(path), folders)
            except ConnectorError as exc:
                if path.suffix.lower() in STORE_SUFFIXES:
                    scan.skipped.append((path, str(exc).split(": ", 1)[-1]))
                continue
            if det.matches and det.matches[0].preset not in GENERIC_PRESETS:
                scan.stores.append((path, det))
            else:
                why = "only the generic heuristics match" if det.matches else "no known agent store"
                scan.skipped.append((path, why))
    except _TooMany:
        scan.truncated = True
    return scan


def _is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def folder_source_name(preset: str, folder: Path, path: Path) -> str:
    """`<preset>-<path in the folder without suffix>`, path parts equal to the preset left out."""
    rel = path.relative_to(folder)
    parts = [*rel.parent.parts, rel.stem if path.is_file() else rel.name]
    parts = [p for p in parts if p and p.lower() != preset.lower()]
    slug = "-".join(re.sub(r"[^A-Za-z0-9_.-]+", "_", p) for p in parts)
    return f"{preset}-{slug}" if slug else preset


def is_store_folder(path: Path) -> bool:
    """A folder to scan for stores (not itself a LanceDB database)."""
    return path.is_dir() and not is_lance_table(path) and not lance_tables(path)
