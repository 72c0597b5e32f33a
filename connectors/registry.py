"""One registry of connectors and presets: built-ins plus an entry-point group.

Third-party connectors register under the entry-point group
`memwatch_overlay.connectors.v1` (name -> Connector subclass); they are loaded lazily,
only when a config names one, and a broken plugin is reported, not fatal to others.
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import warnings
from importlib.metadata import entry_points

from memwatch_overlay.core.errors import ConfigError
from memwatch_overlay.rules.config import SourceConfig
from memwatch_overlay.connectors.base import Connector
from memwatch_overlay.connectors.subjects import apply_subject_mapping
from memwatch_overlay.core.vocab import CONNECTOR_ENTRY_POINTS

ENTRY_POINT_GROUP = CONNECTOR_ENTRY_POINTS

# kind -> "module:Class", imported on first use so optional extras stay optional.
BUILTIN_CONNECTORS = {
    "sqlite": "memwatch_overlay.connectors.sqlite:SqliteConnector",
    "json": "memwatch_overlay.connectors.json_file:JsonConnector",
    "postgres": "memwatch_overlay.connectors.postgres:PostgresConnector",
    "lancedb": "memwatch_overlay.connectors.lancedb:LanceConnector",
}
# preset name -> "module:Class" (or several, one per store kind: `crewai` reads CrewAI 0.x's
# SQLite file and CrewAI 1.x's LanceDB table); each class has `preset`, `kind`, `defaults`, `match()`.
BUILTIN_PRESETS: dict[str, str | tuple[str, ...]] = {
    "langgraph": "memwatch_overlay.connectors.presets.langgraph:LangGraphSqliteStore",
    "mem0": "memwatch_overlay.connectors.presets.mem0:Mem0History",
    "memlife": "memwatch_overlay.connectors.presets.memlife:MemlifeFacts",
    "openai-agents": "memwatch_overlay.connectors.presets.openai_agents:OpenAIAgentsSession",
    "crewai": ("memwatch_overlay.connectors.presets.crewai:CrewAILongTermMemory",
               "memwatch_overlay.connectors.presets.crewai_lancedb:CrewAIMemories"),
    "chroma": "memwatch_overlay.connectors.presets.chroma:ChromaCollections",
    "agno": "memwatch_overlay.connectors.presets.agno:AgnoMemories",
    "llamaindex": "memwatch_overlay.connectors.presets.llamaindex:LlamaIndexChatStore",
    "generic": "memwatch_overlay.connectors.presets.generic:GenericTable",
    "mcp-memory": "memwatch_overlay.connectors.presets.mcp_memory:McpMemoryGraph",
    "generic-json": "memwatch_overlay.connectors.presets.generic_json:GenericJson",
    "generic-postgres": "memwatch_overlay.connectors.presets.generic_postgres:GenericPostgres",
    "mem0-pgvector": "memwatch_overlay.connectors.presets.mem0_pgvector:Mem0PgVector",
    "langgraph-postgres": "memwatch_overlay.connectors.presets.langgraph_postgres:LangGraphPostgresStore",
    "openai-agents-postgres": "memwatch_overlay.connectors.presets.openai_agents_postgres:OpenAIAgentsPostgresSession",
}
# The store kind of each preset class that is not a SQLite one, known without importing it:
# recognising a SQLite file loads no Postgres or LanceDB module (psycopg alone is ~0.5 s of a
# console call's start-up). tests/test_stores_recognition.py holds it to each class's `kind`.
PRESET_SPEC_KINDS = {
    "memwatch_overlay.connectors.presets.crewai_lancedb:CrewAIMemories": "lancedb",
    "memwatch_overlay.connectors.presets.generic_json:GenericJson": "json",
    "memwatch_overlay.connectors.presets.mcp_memory:McpMemoryGraph": "json",
    "memwatch_overlay.connectors.presets.generic_postgres:GenericPostgres": "postgres",
    "memwatch_overlay.connectors.presets.mem0_pgvector:Mem0PgVector": "postgres",
    "memwatch_overlay.connectors.presets.langgraph_postgres:LangGraphPostgresStore": "postgres",
    "memwatch_overlay.connectors.presets.openai_agents_postgres:OpenAIAgentsPostgresSession": "postgres",
}
# Python packages a connector kind needs beyond the core (imported lazily, so checked by name).
CONNECTOR_REQUIRES = {"postgres": "psycopg", "lancedb": "lancedb"}


def _load(spec: str):
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def _specs(name: str) -> tuple[str, ...]:
    spec = BUILTIN_PRESETS[name]
    return (spec,) if isinstance(spec, str) else spec


def kind_of_class(cls: type) -> str:
    return getattr(cls, "kind", "sqlite")


def preset_spec_kind(spec: str) -> str:
    return PRESET_SPEC_KINDS.get(spec, "sqlite")


def preset_classes(kind: str | None = None) -> list[type]:
    """Every preset class that imports on this install (a missing module is skipped); with
    `kind`, only those of that store kind (the others are not imported)."""
    out = []
    for name in BUILTIN_PRESETS:
        for spec in _specs(name):
            if kind is not None and preset_spec_kind(spec) != kind:
                continue
            try:
                out.append(_load(spec))
            except ImportError:
                continue
    return out


def available_presets() -> dict[str, type]:
    """Preset name -> its first class that imports on this install (see preset_classes())."""
    out: dict[str, type] = {}
    for cls in preset_classes():
        out.setdefault(cls.preset, cls)
    return out


def preset_class(name: str, field_name: str = "preset", kind: str | None = None) -> type:
    """The class of preset `name` for store kind `kind` (the first one when None)."""
    if name not in BUILTIN_PRESETS:
        raise ConfigError(f"unknown preset {name!r} (known: {', '.join(BUILTIN_PRESETS)})", field=field_name)
    loaded, problem = [], None
    for spec in _specs(name):
        try:
            loaded.append(_load(spec))
        except ImportError as exc:
            problem = exc
    if not loaded:
        raise ConfigError(f"preset {name!r} is not available: {problem}", field=field_name) from None
    if kind is not None:
        for cls in loaded:
            if kind_of_class(cls) == kind:
                return cls
    return loaded[0]


def connector_class(kind: str) -> type:
    if kind in BUILTIN_CONNECTORS:
        try:
            return _load(BUILTIN_CONNECTORS[kind])
        except ImportError as exc:
            extra = {"postgres": " (install the [postgres] extra: pip install 'memwatch-overlay[postgres]')"}
            raise ConfigError(f"connector {kind!r} is not available: {exc}{extra.get(kind, '')}",
                              field="connector") from None
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == kind:
            try:
                return ep.load()
            except Exception as exc:  # a broken plugin must not take the tool down
                warnings.warn(f"connector plugin {kind!r} failed to load: {exc}")
                break
    raise ConfigError(f"unknown connector {kind!r}", field="connector")


def with_preset_defaults(source: SourceConfig, defaults: dict) -> SourceConfig:
    """Fill the keys the user left unset from a preset's mapping."""
    values = {}
    for key, value in defaults.items():
        current = getattr(source, key)
        if current in (None, [], ""):
            values[key] = list(value) if isinstance(value, (list, tuple)) else value
    return dataclasses.replace(source, **values)


def make_connector(source: SourceConfig) -> Connector:
    """The connector (or preset subclass) for one [[sources]] entry."""
    if source.preset:
        cls = preset_class(source.preset, kind=source.connector)
        kind = kind_of_class(cls)
        if kind != source.connector:
            kinds = sorted({kind_of_class(c) for c in preset_classes() if c.preset == source.preset})
            fits = sorted({c.preset for c in preset_classes() if kind_of_class(c) == source.connector})
            raise ConfigError(f"preset {source.preset!r} reads {' and '.join(kinds)} stores, but source "
                              f"{source.name!r} has connector = {source.connector!r} (presets for "
                              f"{source.connector}: {', '.join(fits) or 'none'})", field="preset")
        source = with_preset_defaults(source, getattr(cls, "defaults", {}))
        return apply_subject_mapping(cls(source))
    return apply_subject_mapping(connector_class(source.connector)(source))


def catalog() -> dict[str, list[dict]]:
    """Connectors and presets with where each came from (for `memwatch-overlay connectors`).

    Built-ins are imported to read their description (a missing extra is reported,
    not raised); plugins are listed from their entry-point metadata without loading them.
    """
    connectors = []
    for kind, spec in BUILTIN_CONNECTORS.items():
        row = {"name": kind, "origin": f"built-in ({spec})", "description": "", "available": True, "note": ""}
        try:
            row["description"] = _load(spec).description
            _check_requires(kind)
        except ImportError as exc:
            row["available"], row["note"] = False, _unavailable(exc)
        connectors.append(row)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(ep, "dist", None)
        origin = f"plugin {dist.name} {dist.version}" if dist is not None else "plugin"
        connectors.append({"name": ep.name, "origin": f"{origin} ({ep.value})", "description": "",
                           "available": True, "note": "entry point, loaded when a config names it"})
    presets = []
    for name in BUILTIN_PRESETS:
        for spec in _specs(name):
            row = {"name": name, "origin": f"built-in ({spec})", "kind": "", "description": "",
                   "available": True, "note": ""}
            try:
                cls = _load(spec)
                row["kind"] = kind_of_class(cls)
                row["description"] = getattr(cls, "description", "")
                _check_requires(row["kind"])
            except ImportError as exc:
                row["available"], row["note"] = False, _unavailable(exc)
            presets.append(row)
    return {"connectors": connectors, "presets": presets}


def _check_requires(kind: str) -> None:
    """ImportError when the package a lazily importing connector kind needs is missing."""
    package = CONNECTOR_REQUIRES.get(kind)
    if package and importlib.util.find_spec(package) is None:
        raise ImportError(f"No module named {package!r}", name=package)


def _unavailable(exc: ImportError) -> str:
    package = (exc.name or "").split(".")[0]
    for kind, needed in CONNECTOR_REQUIRES.items():
        if package == needed:
            return f"needs {needed}: pip install 'memwatch-overlay[{kind}]'"
    return f"unavailable: {exc}"
