"""Overlay-only commands: stats, status, forget, refresh. None of them reads a source."""
from __future__ import annotations

import time

from ..rules.config import Config
from .audit import open_overlay
from .errors import ConfigError
from .timeparse import to_iso


def overlay_stats(config: Config | None, overlay_path: str | None) -> dict:
    with open_overlay(config, overlay_path) as store:
        return {"overlay": str(store.path), "summary": store.summary(),
                "by_source": store.summary(group_by="source"),
                "by_category": store.summary(group_by="category")}


def source_status(config: Config | None, overlay_path: str | None, now: float | None = None) -> dict:
    now = time.time() if now is None else now
    with open_overlay(config, overlay_path) as store:
        out = []
        for r in store.sources():
            out.append({"name": r["name"], "connector": r["connector"], "target": r["target"],
                        "last_sync": to_iso(r["last_sync"]),
                        "lag_seconds": None if r["last_sync"] is None else round(now - r["last_sync"], 3),
                        "rows_seen": r["rows_seen"], "rows_read_last_sync": r["rows_read_last_sync"],
                        "errors": r["errors"], "last_error": r["last_error"]})
        return {"sources": out}


def forget(config: Config | None, overlay_path: str | None, refs: list[str], source_name: str | None) -> int:
    if not refs and not source_name:
        raise ConfigError("name facts (REF …) or --source", field="REF")
    with open_overlay(config, overlay_path) as store:
        with store.transaction():
            if source_name:
                row = store.source_row(source_name)
                if row is None:
                    raise ConfigError(f"no source {source_name!r} in the overlay", field="--source")
                n = store.set_status(None, "forgotten", row["id"])
            else:
                n = store.set_status(refs, "forgotten")
            store.apply_contradiction_status()
        return n


def refresh(config: Config | None, overlay_path: str | None, refs: list[str], now: float | None = None) -> int:
    with open_overlay(config, overlay_path) as store:
        with store.transaction():
            n = store.mark_refreshed(refs, time.time() if now is None else now)
        if n < len(refs):
            missing = [r for r in refs if store.fact_id(r) is None]
            if missing:
                raise ConfigError(f"no fact {missing[0]!r} in the overlay", field="REF")
        return n
