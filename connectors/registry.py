"""One registry of connectors and presets: built-ins plus an entry-point group.

Third-party connectors register under the entry-point group
`memwatch_overlay.connectors.v1` (name -> Connector subclass); they are loaded lazily,
only when a config names one, and a broken plugin is reported, not fatal to others.
"""
from __future__ import annotations

import dataclasses
import importlib
import warnings
from importlib.metadata import entry_points

from memwatch_overlay.core.errors import ConfigError
from memwatch_overlay.rules.config import SourceConfig
from memwatch_overlay.connectors.base import Connector
from memwatch_overlay.core.vocab import CONNECTOR_ENTRY_POINTS

ENTRY_POINT_GROUP = CONNECTOR_ENTRY_POINTS

# kind -> "module:Class", imported on first use so optional extras stay optional.
BUILTIN_CONNECTORS = {
    "sqlite": "memwatch_overlay.connectors.sqlite:SqliteConnector",
    "json": "memwatch_overlay.connectors.json_file:JsonConnector",
    "postgres": "memwatch_overlay.connectors.postgres:PostgresConnector",
}
# preset name -> "module:Class"; each class has `preset`, `kind`, `defaults`, `match()`.
BUILTIN_PRESETS = {
    "langgraph": "memwatch_overlay.connectors.presets.langgraph:LangGraphSqliteStore",
    "mem0": "memwatch_overlay.connectors.presets.mem0:Mem0History",
    "memlife": "memwatch_overlay.connectors.presets.memlife:MemlifeFacts",
    "openai-agents": "memwatch_overlay.connectors.presets.openai_agents:OpenAIAgentsSession",
    "crewai": "memwatch_overlay.connectors.presets.crewai:CrewAILongTermMemory",
    "generic": "memwatch_overlay.connectors.presets.generic:GenericTable",
    "mcp-memory": "memwatch_overlay.connectors.presets.mcp_memory:McpMemoryGraph",
    "generic-json": "memwatch_overlay.connectors.presets.generic_json:GenericJson",
    "generic-postgres": "memwatch_overlay.connectors.presets.generic_postgres:GenericPostgres",
    "mem0-pgvector": "memwatch_overlay.connectors.presets.mem0_pgvector:Mem0PgVector",
    "langgraph-postgres": "memwatch_overlay.connectors.presets.langgraph_postgres:LangGraphPostgresStore",
}


def _load(spec: str):
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def available_presets() -> dict[str, type]:
    """Preset classes that import on this install (a missing module is skipped)."""
    out = {}
    for name, spec in BUILTIN_PRESETS.items():
        try:
            out[name] = _load(spec)
        except ImportError:
            continue
    return out


def preset_class(name: str, field_name: str = "preset") -> type:
    if name not in BUILTIN_PRESETS:
        raise ConfigError(f"unknown preset {name!r} (known: {', '.join(BUILTIN_PRESETS)})", field=field_name)
    try:
        return _load(BUILTIN_PRESETS[name])
    except ImportError as exc:
        raise ConfigError(f"preset {name!r} is not available: {exc}", field=field_name) from None


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
        cls = preset_class(source.preset)
        kind = getattr(cls, "kind", "sqlite")
        if kind != source.connector:
            fits = [n for n, c in available_presets().items() if getattr(c, "kind", "sqlite") == source.connector]
            raise ConfigError(f"preset {source.preset!r} reads {kind} stores, but source {source.name!r} has "
                              f"connector = {source.connector!r} (presets for {source.connector}: "
                              f"{', '.join(fits) or 'none'})", field="preset")
        source = with_preset_defaults(source, getattr(cls, "defaults", {}))
        return cls(source)
    return connector_class(source.connector)(source)


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
        except ImportError as exc:
            row["available"], row["note"] = False, _unavailable(exc)
        connectors.append(row)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(ep, "dist", None)
        origin = f"plugin {dist.name} {dist.version}" if dist is not None else "plugin"
        connectors.append({"name": ep.name, "origin": f"{origin} ({ep.value})", "description": "",
                           "available": True, "note": "entry point, loaded when a config names it"})
    presets = []
    for name, spec in BUILTIN_PRESETS.items():
        row = {"name": name, "origin": f"built-in ({spec})", "kind": "", "description": "",
               "available": True, "note": ""}
        try:
            cls = _load(spec)
            row["kind"] = getattr(cls, "kind", "sqlite")
            row["description"] = getattr(cls, "description", "")
        except ImportError as exc:
            row["available"], row["note"] = False, _unavailable(exc)
        presets.append(row)
    return {"connectors": connectors, "presets": presets}


def _unavailable(exc: ImportError) -> str:
    if exc.name and exc.name.split(".")[0] == "psycopg":
        return "needs psycopg: pip install 'memwatch-overlay[postgres]'"
    return f"unavailable: {exc}"
