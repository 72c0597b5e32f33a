"""`memwatch-overlay mcp`: the overlay as an MCP server over stdio (the `mcp` extra).

Tools: check_utterance, get_freshness, list_stale, list_contradicted, mark_refreshed,
forget. Resources: memwatch://stats and memwatch://health. Every call opens the overlay,
rescores what it returns at the current time and closes it again, so the server never
holds a transaction while a daemon or an audit writes the same overlay.

`OverlayTools` does the work and knows nothing of MCP (tested directly and through a
real MCP client); `build_server` registers its methods with the SDK's high-level server
(`MCPServer` in mcp 2, `FastMCP` in mcp 1).
"""
from __future__ import annotations

import inspect
import json
import time
from pathlib import Path
from typing import Any

from memwatch_overlay.rules.config import Config
from memwatch_overlay.overlay.engine.audit import fact_dict, open_overlay, overlay_target
from memwatch_overlay.core.errors import ConfigError, MemwatchError
from memwatch_overlay.overlay.store.database import ANY, SCHEMA_VERSION
from memwatch_overlay.overlay.engine.sync import SyncEngine

SERVER_NAME = "memwatch-overlay"
DEFAULT_LIMIT = 50
MAX_LIMIT = 1000      # a list tool returns at most this many facts (a bigger limit is clamped)


def checked_limit(limit: int) -> int:
    """`limit` for a list tool: below 1 is an error (not "every row"), above MAX_LIMIT is clamped.

    Example:
        >>> checked_limit(5000)
        1000
    """
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ConfigError(f"limit must be a whole number from 1 to {MAX_LIMIT}, not {limit!r}", field="limit")
    return min(limit, MAX_LIMIT)


class OverlayTools:
    """What the MCP tools do, on the overlay at `overlay_path` (or the config's)."""

    def __init__(self, config: Config | None = None, overlay_path: str | None = None, clock=time.time):
        self.config = config or Config()
        self.overlay_path = overlay_path
        self.clock = clock
        self._detector = None

    def _open(self):
        return open_overlay(self.config, self.overlay_path)

    @property
    def detector(self):
        if self._detector is None:
            from memwatch_overlay.overlay.detect.blocks import make_detector
            self._detector = make_detector(self.config)
        return self._detector

    def check_utterance(self, text: str, subject: str | None = None) -> dict:
        from memwatch_overlay.overlay.engine.check import check_text
        if subject is None:
            with self._open() as store:
                subjects = store.live_subjects(limit=3)
            if len(subjects) > 1:
                shown = ", ".join(repr(s) for s in subjects[:2]) + (", ..." if len(subjects) > 2 else "")
                raise ConfigError(f"the overlay holds the memories of several subjects ({shown}): "
                                  "give `subject`, whose memories the utterance is compared with", field="subject")
        return check_text(text, self.config, overlay_path=self._path(), subject=subject, as_of=self.clock(),
                          detector=self.detector).as_dict()

    def get_freshness(self, ref: str, subject: str | None = None) -> dict:
        from memwatch_overlay.overlay.engine.maintenance import resolve_refs
        with self._open() as store:
            resolved = resolve_refs(store, [ref], subject)[0]
            SyncEngine(store, self.config).rescore(self.clock(), fact_ids=[store.fact_id(resolved)])
            return fact_dict(store.fact_row(resolved))

    def _listed(self, subject: Any, labels=None, statuses=("active", "contradicted"), limit=DEFAULT_LIMIT) -> list:
        with self._open() as store:
            SyncEngine(store, self.config).rescore(self.clock())
            return [fact_dict(r) for r in store.find_facts(subject=subject, labels=labels, statuses=statuses,
                                                           limit=checked_limit(limit))]

    def list_stale(self, subject: str | None = None, limit: int = DEFAULT_LIMIT) -> list:
        return self._listed(ANY if subject is None else subject, labels=("stale", "expired"), limit=limit)

    def list_contradicted(self, subject: str | None = None, limit: int = DEFAULT_LIMIT) -> list:
        return self._listed(ANY if subject is None else subject, statuses=("contradicted",), limit=limit)

    def mark_refreshed(self, ref: str, subject: str | None = None) -> dict:
        from memwatch_overlay.overlay.engine.maintenance import refresh
        refresh(self.config, self._path(), [ref], now=self.clock(), subject=subject)
        return self.get_freshness(ref, subject)

    def forget(self, ref: str, subject: str | None = None) -> dict:
        from memwatch_overlay.overlay.engine.maintenance import forget
        n = forget(self.config, self._path(), [ref], None, subject)
        return {"forgotten": n, "ref": ref}

    def stats(self) -> dict:
        from memwatch_overlay.overlay.engine.maintenance import overlay_stats
        with self._open() as store:
            SyncEngine(store, self.config).rescore(self.clock())
        return overlay_stats(self.config, self._path())

    def health(self) -> dict:
        from memwatch_overlay.overlay.engine.maintenance import source_status
        detector = self.detector is not None
        with self._open() as store:
            version = store.schema_version()
            integrity = store.integrity()
            path = store.label
        status = source_status(self.config, self._path(), now=self.clock())
        errors = sum(s["errors"] for s in status["sources"])
        return {"ok": integrity == "ok" and version == SCHEMA_VERSION, "overlay": path,
                "schema_version": version, "integrity": integrity, "contradiction_detector": detector,
                "source_errors": errors, **status}

    def _path(self) -> str:
        return overlay_target(self.config, self.overlay_path)


def _sdk():
    """(server class, ToolError) of the installed MCP SDK: mcp 2 (MCPServer) or mcp 1 (FastMCP)."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
        return MCPServer, ToolError
    except ImportError:
        pass
    try:
        from mcp.server.fastmcp import FastMCP
        from mcp.server.fastmcp.exceptions import ToolError
        return FastMCP, ToolError
    except ImportError:
        raise ConfigError("the MCP server needs the official MCP SDK: pip install 'memwatch-overlay[mcp]'",
                          field="mcp") from None


def build_server(tools: OverlayTools):
    """The MCP server with the overlay's tools and resources registered.

    A domain error (unknown ref, no detector…) reaches the client as the tool's error
    message; anything else is a crash the SDK reports as such.
    """
    server_class, tool_error = _sdk()

    def call(method, *args):
        try:
            return method(*args)
        except MemwatchError as exc:
            raise tool_error(str(exc)) from None

    from memwatch_overlay.core.version import __version__
    instructions = ("Freshness, expiry and contradiction flags of an AI agent's memories. Call check_utterance on "
                    "what the user says to learn which stored memories it contradicts; list_stale before relying "
                    "on old memories; mark_refreshed when the user re-confirms one.")
    try:                                   # mcp 2: serverInfo.version from the constructor
        server = server_class(SERVER_NAME, instructions=instructions, version=__version__)
    except TypeError:                      # mcp 1's FastMCP has no such argument
        server = server_class(SERVER_NAME, instructions=instructions)
        server._mcp_server.version = __version__

    def tool(fn):
        """Register `fn` with its docstring dedented (the SDK sends it as written, indentation and all)."""
        return server.tool(description=inspect.cleandoc(fn.__doc__ or ""))(fn)

    @tool
    def check_utterance(text: str, subject: str | None = None) -> dict:
        """Which stored facts the utterance `text` contradicts, with UPDATE/EXPIRE suggestions
        and the stale memories on the same topics. Nothing is stored. `subject` is the user whose
        memories are compared; it is required when the overlay holds several users' memories
        (it may be left out only when there is one)."""
        return call(tools.check_utterance, text, subject)

    @tool
    def get_freshness(ref: str, subject: str | None = None) -> dict:
        """Freshness, label, confidence and days left of one fact, by ref (source:table:pk) or by
        the key of a fact added through memwatch."""
        return call(tools.get_freshness, ref, subject)

    @tool
    def list_stale(subject: str | None = None, limit: int = DEFAULT_LIMIT) -> list[dict]:
        """Stale or expired facts, stalest first; of one subject, or of every subject when omitted.
        `limit`: 1 to 1000 (default 50)."""
        return call(tools.list_stale, subject, limit)

    @tool
    def list_contradicted(subject: str | None = None, limit: int = DEFAULT_LIMIT) -> list[dict]:
        """Facts a newer fact contradicts (with the refs that contradict them). `limit`: 1 to 1000 (default 50)."""
        return call(tools.list_contradicted, subject, limit)

    @tool
    def mark_refreshed(ref: str, subject: str | None = None) -> dict:
        """The user re-confirmed this fact now: its freshness and confidence restart."""
        return call(tools.mark_refreshed, ref, subject)

    @tool
    def forget(ref: str, subject: str | None = None) -> dict:
        """Hide a fact from reports (a fact added through memwatch is erased); its source is untouched."""
        return call(tools.forget, ref, subject)

    @server.resource("memwatch://stats", mime_type="application/json")
    def stats() -> str:
        """Counts per label, per source and per category."""
        return json.dumps(tools.stats())

    @server.resource("memwatch://health", mime_type="application/json")
    def health() -> str:
        """Overlay integrity and schema, detector availability, per-source sync lag and errors."""
        return json.dumps(tools.health())

    return server


def serve(config: Config | None, overlay_path: str | None, create: bool = False) -> None:
    """Run the server on stdin/stdout until the client disconnects.

    An overlay file that does not exist is refused (a mistyped --overlay would otherwise
    serve an empty new overlay and report ok) unless `create` is true.
    """
    from memwatch_overlay.overlay.store.postgres_dialect import is_dsn
    target = overlay_target(config, overlay_path)
    if not create and not is_dsn(target) and not Path(target).exists():
        raise ConfigError(f"no overlay at {target}: audit a store into it first, or pass --create to start "
                          "an empty one", field="--overlay")
    tools = OverlayTools(config, overlay_path)
    tools._open().close()     # a bad overlay path fails here, as a one-line CLI error
    build_server(tools).run("stdio")
