"""Overlay-only commands: stats, status, forget, refresh, gc. None of them reads a source."""
from __future__ import annotations

import json
import os
import socket
import time

from memwatch_overlay.rules.config import Config
from memwatch_overlay.overlay.engine.audit import open_overlay
from memwatch_overlay.core.errors import ConfigError
from memwatch_overlay.overlay.engine.scoring import DAY
from memwatch_overlay.core.timeparse import to_iso


def overlay_stats(config: Config | None, overlay_path: str | None) -> dict:
    with open_overlay(config, overlay_path) as store:
        return {"overlay": store.label, "summary": store.summary(),
                "by_source": store.summary(group_by="source"),
                "by_category": store.summary(group_by="category")}


def source_status(config: Config | None, overlay_path: str | None, now: float | None = None) -> dict:
    """Per source: last sync, lag, rows seen/read, errors; and whether a daemon is alive.

    `lag_seconds` is how long ago the overlay was last known to match the source: the
    later of its last sync and the daemon's last check that found nothing new (a quiet
    store watched by a live daemon has a small lag even when nothing was synced for days).
    """
    now = time.time() if now is None else now
    with open_overlay(config, overlay_path) as store:
        out = []
        for r in store.sources():
            current = max((t for t in (r["last_sync"], r["last_checked"]) if t is not None), default=None)
            out.append({"name": r["name"], "connector": r["connector"], "target": r["target"],
                        "last_sync": to_iso(r["last_sync"]),
                        "lag_seconds": None if current is None else round(max(0.0, now - current), 3),
                        "rows_seen": r["rows_seen"], "rows_read_last_sync": r["rows_read_last_sync"],
                        "errors": r["errors"], "last_error": r["last_error"],
                        "consecutive_errors": r["consecutive_errors"], "last_error_at": to_iso(r["last_error_at"]),
                        "last_checked": to_iso(r["last_checked"]), "last_full_sync": to_iso(r["last_full_sync"]),
                        "last_deletion_scan": to_iso(r["last_deletion_scan"]),
                        "keys_read_last_scan": r["keys_read_last_scan"],
                        "cursor": json.loads(r["cursor_json"]) if r["cursor_json"] else None})
        daemon = daemon_status(store.get_meta("daemon"), now)
        result = {"sources": out, "daemon": daemon}
        if store.dialect == "postgres":      # several daemons: who holds each source's lease
            from memwatch_overlay.overlay.store.leases import (
                fleet_table,
                held_advisory_locks,
                lease_table,
            )
            held = held_advisory_locks(store)            # read once for both tables
            lease_rows = lease_table(store, held)
            result["daemons"] = fleet_table(store, lease_rows, held)
            leases = {lease["source"]: {k: v for k, v in lease.items() if k != "source"} for lease in lease_rows}
            for item in out:
                if item["name"] in leases:
                    item["lease"] = leases[item["name"]]
            # `daemon` is the last heartbeat any daemon wrote; with a fleet, one of them
            # stopping must not read as "no daemon running" while the others work on.
            if result["daemons"]:
                daemon["running"] = any(d["alive"] for d in result["daemons"])
        return result


def daemon_status(meta: dict | None, now: float) -> dict:
    """`running` when the last heartbeat is recent and the process (on this host) still exists."""
    if not meta:
        return {"running": False}
    interval = meta.get("heartbeat_seconds") or 15.0
    running = meta.get("stopped_at") is None and now - meta.get("heartbeat", 0) <= 3 * interval + 5
    if running and meta.get("host") == socket.gethostname():
        try:
            os.kill(int(meta["pid"]), 0)
        except ProcessLookupError:
            running = False
        except (PermissionError, ValueError, TypeError):
            pass
    return {"running": running, "pid": meta.get("pid"), "host": meta.get("host"),
            "started_at": to_iso(meta.get("started_at")), "heartbeat": to_iso(meta.get("heartbeat")),
            "stopped_at": to_iso(meta.get("stopped_at"))}


def resolve_refs(store, refs: list[str], subject: str | None = None) -> list[str]:
    """Refs as given, or native keys (`employer`) turned into refs; unknown ones are an error."""
    from memwatch_overlay.overlay.engine.added_facts import resolve_ref
    out = []
    for given in refs:
        ref = resolve_ref(store, given, subject)
        if ref is None:
            raise ConfigError(f"no fact {given!r} in the overlay (give a REF such as bot:agent_facts:42 "
                              "or a key added with `memwatch-overlay add`)", field="REF")
        out.append(ref)
    return out


def forget(config: Config | None, overlay_path: str | None, refs: list[str], source_name: str | None,
           subject: str | None = None) -> int:
    """Hide source facts from reports (status `forgotten`); erase native facts (the overlay is their store)."""
    from memwatch_overlay.overlay.engine.added_facts import forget_native, is_native
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
                resolved = resolve_refs(store, refs, subject)
                n = forget_native(store, [r for r in resolved if is_native(r)])
                others = [r for r in resolved if not is_native(r)]
                if others:
                    n += store.set_status(others, "forgotten")
            store.apply_contradiction_status()
        return n


def refresh(config: Config | None, overlay_path: str | None, refs: list[str], now: float | None = None,
            subject: str | None = None) -> int:
    """Mark facts (refs or native keys) re-confirmed at `now`: freshness and confidence restart."""
    with open_overlay(config, overlay_path) as store:
        with store.transaction():
            return store.mark_refreshed(resolve_refs(store, refs, subject), time.time() if now is None else now)


def rescore_all(config: Config | None, overlay_path: str | None, as_of: float | None = None) -> int:
    """Recompute the score of every live fact at `as_of` (memwatch's `refresh` with no key);
    returns how many were scored."""
    from memwatch_overlay.overlay.engine.sync import SyncEngine
    with open_overlay(config, overlay_path) as store:
        return SyncEngine(store, config or Config()).rescore(time.time() if as_of is None else as_of)


def gc(config: Config | None, overlay_path: str | None, retention_days: float | None = None,
       now: float | None = None) -> dict:
    """Prune overlay rows of facts deleted in their source more than `retention_days` ago.

    The default period is [lifecycle] gc_retention_days (30). A deleted fact's last
    sighting (`last_seen`, the last sync that read it) stands for its deletion time.
    """
    cfg = config or Config()
    days = cfg.gc_retention_days if retention_days is None else retention_days
    if days < 0:
        raise ConfigError(f"must be >= 0, not {days}", field="--retention-days")
    now = time.time() if now is None else now
    with open_overlay(config, overlay_path) as store:
        with store.transaction():
            facts, contradictions = store.prune_deleted(now - days * DAY)
            store.apply_contradiction_status()
        return {"overlay": store.label, "retention_days": days, "facts_pruned": facts,
                "contradictions_pruned": contradictions}
