"""`memwatch-overlay daemon`: watch every source and keep the overlay current, at the cost of what changed.

Why it is shaped this way:
- One loop does all reading and writing. watchdog's observer thread only marks a source
  dirty and wakes the loop (handlers run serially on that thread; real work there
  would delay every other event). Bursts of events are debounced.
- Events are hints, not truth: each source is also checked every `poll_seconds`, and a
  check is the connector's `has_changes()` (SQLite: `PRAGMA data_version`), so a quiet
  store costs microseconds and a missed event costs at most one poll interval.
- A tick per source: incremental sync from the stored cursor (one overlay transaction,
  cursor included: a `kill -9` anywhere loses at most that sync, redone on restart);
  the key-only deletion pass every `deletion_scan_seconds`; a full sync only when the
  source is new, its mapping/rules/scoring changed, or `full_resync_seconds` says so.
- Labels decay with time: every `rescore_seconds` only facts whose `next_change` has
  passed are rescored (an index range, not a table scan).
- A failing source (gone, locked, corrupt, unreachable) is retried with capped
  exponential backoff and logged at most once per `error_log_seconds`, with a
  "recovered after N errors" line; the other sources keep going.
- The daemon itself never writes to a source. Consumers hook in through `after_sync`
  (callables given a `SyncEvent` after every committed change); `run_daemon` adds
  write-back's hook when the config has [[actions]], which writes only to sources with
  `apply = true`.

Example:
    with Daemon(load_config("memwatch.toml")) as d:
        d.run()            # until stop() (another thread) or a signal via run_daemon()
"""
from __future__ import annotations

import dataclasses
import logging
import os
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Callable

from watchdog.events import FileSystemEventHandler

from memwatch_overlay.connectors.base import Connector
from memwatch_overlay.connectors.registry import make_connector
from memwatch_overlay.rules.config import Config, SourceConfig
from memwatch_overlay.overlay.engine.audit import open_overlay
from memwatch_overlay.core.errors import ConfigError, ExitStatus, MemwatchError
from memwatch_overlay.overlay.store.leases import LeaseLost
from memwatch_overlay.overlay.daemon.logs import LOGGER_NAME
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.overlay.engine.sync import SyncEngine, SyncStats

DEFAULT_POLL_INTERVAL = 5.0       # a source's poll_seconds unless set
POLLING_OBSERVER_INTERVAL = 1.0   # --poll: how often watchdog's PollingObserver stats the folders
MAX_SLEEP = 30.0                  # the loop wakes at least this often (stop flag, clock jumps)


@dataclasses.dataclass
class SyncEvent:
    """What `after_sync` hooks receive after a committed change to the overlay.

    kind: "start" (once per source and run, at its first good service) | "full" | "sync" |
    "deletions" | "rescore"; `source` is None for rescore (every source).
    """

    kind: str
    source: SourceConfig | None
    stats: SyncStats | None
    store: OverlayStore
    engine: SyncEngine
    rescored: int = 0


@dataclasses.dataclass
class _SourceState:
    source: SourceConfig
    connector: Connector | None = None
    dirty: bool = True                  # first tick checks every source
    first_dirty: float | None = None    # monotonic times of the burst being debounced
    last_dirty: float | None = None
    next_poll: float = 0.0
    next_deletion_scan: float = 0.0
    next_full: float | None = None      # periodic full resync (None: never)
    next_deferred: float | None = None  # the connector put work off until then (update scan)
    needs_full: bool = False
    changed_since_scan: bool = True     # unknown while we were down: scan once
    failures: int = 0                   # consecutive
    errors_logged_at: float | None = None
    errors_suppressed: int = 0
    retry_at: float = 0.0
    checked_at: float | None = None     # wall time of the last check that found the overlay current
    announced: bool = False             # the "start" event went to the hooks

    @property
    def name(self) -> str:
        return self.source.name


class Daemon:
    """The sidecar: `start()`, `run()` (or `tick()` yourself), `stop()`; also a context manager.

    `stop()` is idempotent and safe from another thread or a signal handler's flag; the
    loop finishes the transaction in progress first. `after_sync` is the hook point for
    write-back and other consumers.
    """

    def __init__(self, config: Config, overlay_path: str | None = None, poll: bool = False,
                 log: logging.Logger | None = None, clock: Callable[[], float] = time.time):
        if not config.sources:
            raise ConfigError("the config has no [[sources]] to watch", field="sources",
                              path=str(config.path) if config.path else None)
        self.config = config
        self.settings = config.daemon
        self.overlay_path = overlay_path
        self.poll = poll
        self.log = log or logging.getLogger(LOGGER_NAME)
        self.clock = clock
        self.after_sync: list[Callable[[SyncEvent], None]] = []
        self.store: OverlayStore | None = None
        self.engine: SyncEngine | None = None
        self.states: list[_SourceState] = []
        self.observer = None
        self._handler = None
        self._unwatched: set[str] = set()
        self.ticks = 0
        self.syncs = 0
        self.stop_reason: str | None = None
        self.first_error: BaseException | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._lock = threading.Lock()             # source states (the observer thread writes them)
        self._lifecycle = threading.RLock()
        self._loop_thread: threading.Thread | None = None
        self._loop_exited = threading.Event()
        self._started = False
        self._stopped = False
        self._announced = False
        self._next_rescore = 0.0
        self._next_heartbeat = 0.0
        self._started_at = 0.0
        self.leases = None        # overlay/store/leases.py, when the overlay is on Postgres

    # -- lifecycle ----------------------------------------------------------------------
    def __enter__(self) -> "Daemon":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        with self._lifecycle:
            if self._started or self._stopped:
                return
            self._started = True
            self._started_at = self.clock()
            self.store = open_overlay(self.config, self.overlay_path)
            from memwatch_overlay.overlay.detect.blocks import make_detector  # contradictions, as audit finds them
            self.engine = SyncEngine(self.store, self.config, detector=make_detector(self.config))
            if self.store.dialect == "postgres":
                # Several daemons may share this overlay: each syncs only the sources it leases.
                from memwatch_overlay.overlay.store.leases import DEFAULT_HEARTBEAT_SECONDS, Leases
                self.leases = Leases(self.store.path, heartbeat_seconds=min(
                    DEFAULT_HEARTBEAT_SECONDS, self.settings.heartbeat_seconds)).start()
                self.engine.guard = self.leases.guard
            mono = time.monotonic()
            for source in self.config.sources:
                self.states.append(self._initial_state(source, mono))
            self._start_observer()
            self._heartbeat(force=True)
        mode = "polling" if self.poll else "file events + polling"
        self._announced = True     # from here on, a "daemon stopped" line pairs with this one
        self.log.info("daemon started: %d source(s), overlay %s, %s", len(self.states), self.store.label, mode,
                      extra={"event": "start", "sources": [s.name for s in self.states],
                             "overlay": self.store.label, "pid": os.getpid(),
                             **({"lease_owner": self.leases.owner} if self.leases else {})})

    def request_stop(self, reason: str = "stop requested") -> None:
        """Ask the loop to stop after the current transaction (safe in a signal handler)."""
        if self.stop_reason is None:
            self.stop_reason = reason
        self._stop.set()
        self._wake.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def stop(self, timeout: float | None = 60.0) -> None:
        """Stop and close everything; idempotent, keeps the first error.

        From another thread while `run()` is looping: asks the loop to stop and waits for
        it, so nothing is closed under a sync in progress. From inside the loop (a hook):
        only asks.
        """
        self.request_stop()
        loop = self._loop_thread
        if loop is not None:
            if loop is not threading.current_thread():
                self._loop_exited.wait(timeout)
            return
        self._shutdown()

    def _shutdown(self) -> None:
        with self._lifecycle:
            if self._stopped:
                return
            self._stopped = True
            if not self._started:
                return
            if self.observer is not None:
                try:
                    self.observer.stop()
                    self.observer.join(timeout=5)
                except Exception as exc:  # observer teardown is best effort
                    self.first_error = self.first_error or exc
            for state in self.states:
                self._close_connector(state)
            if self.store is not None:
                try:
                    with self.store.transaction():
                        self._write_checked()
                        self.store.set_meta("daemon", {**self._daemon_meta(), "stopped_at": self.clock()})
                except Exception as exc:
                    self.first_error = self.first_error or exc
                self.store.close()
            if self.leases is not None:
                try:
                    self.leases.close()
                except Exception as exc:
                    self.first_error = self.first_error or exc
        if not self._announced:
            return    # start() failed (a future-schema overlay...): its own error is the whole story
        self.log.info("daemon stopped (%s) after %d tick(s), %d sync(s)", self.stop_reason, self.ticks, self.syncs,
                      extra={"event": "stop", "reason": self.stop_reason, "ticks": self.ticks, "syncs": self.syncs})

    def run(self, once: bool = False) -> None:
        """Tick until stopped (`once`: a single tick syncing every source), then shut down."""
        self._loop_thread = threading.current_thread()
        self._loop_exited.clear()
        if once:
            # a single pass (cron style) has no later tick to defer the update scan to
            self.settings = dataclasses.replace(self.settings, update_scan_seconds=0.0)
        try:
            self.start()
            while not self._stop.is_set():
                self.tick(force=once)
                if once:
                    self.request_stop("--once")
                    break
                self._sleep()
        finally:
            self._loop_thread = None
            try:
                self._shutdown()
            finally:
                self._loop_exited.set()

    # -- one pass -----------------------------------------------------------------------
    def tick(self, force: bool = False) -> None:
        """Service every source that is dirty or due, then the rescore and heartbeat if due."""
        self.ticks += 1
        if self.leases is not None:
            self._balance_leases()
        # Failing sources last: one whose reads run into their timeout_seconds delays the
        # healthy ones of this tick not at all (and the next tick's by at most that timeout).
        for state in sorted(self.states, key=lambda st: st.failures > 0):
            if self._stop.is_set():
                return
            if self.leases is not None and not self.leases.holds(state.name):
                continue
            mono = time.monotonic()
            if mono < state.retry_at and not force:
                continue
            if force or self._due(state, mono):
                self._service(state, force)
        if self._stop.is_set():
            return
        mono = time.monotonic()
        if force or mono >= self._next_rescore:
            self._rescore()
            self._next_rescore = mono + self.settings.rescore_seconds
        self._heartbeat()

    def _due(self, state: _SourceState, mono: float) -> bool:
        with self._lock:
            if state.dirty and state.last_dirty is not None:
                quiet = mono - state.last_dirty >= self.settings.debounce_seconds
                waited = mono - (state.first_dirty or mono) >= self.settings.max_delay_seconds
                if quiet or waited:
                    return True
            elif state.dirty:
                return True
        if mono >= state.next_poll:
            return True
        if state.needs_full or (state.next_full is not None and mono >= state.next_full):
            return True
        if state.next_deferred is not None and mono >= state.next_deferred:
            return True
        return state.changed_since_scan and mono >= state.next_deletion_scan

    def _service(self, state: _SourceState, force: bool = False) -> None:
        engine = self.engine
        with self._lock:
            state.dirty, state.first_dirty, state.last_dirty = False, None, None
        mono = time.monotonic()
        state.next_poll = mono + (state.source.poll_seconds or DEFAULT_POLL_INTERVAL)
        try:
            connector = self._connector(state)
            if state.needs_full or (state.next_full is not None and mono >= state.next_full):
                connector.has_changes()   # baseline: commits during the full read show up next tick
                stats = engine.sync(state.source, full=True, connector=connector)
                self._schedule_deferred(state, connector)
                self._synced(state, "full", stats)
                state.needs_full = False
                state.changed_since_scan = False
                state.next_deletion_scan = time.monotonic() + self.settings.deletion_scan_seconds
                if self.settings.full_resync_seconds:
                    state.next_full = time.monotonic() + self.settings.full_resync_seconds
            elif connector.has_changes() or (state.next_deferred is not None and mono >= state.next_deferred):
                state.changed_since_scan = True
                stats = engine.sync(state.source, full=False, connector=connector)
                self._schedule_deferred(state, connector)
                self._synced(state, "sync", stats)
            else:
                state.checked_at = self.clock()
            if self._stop.is_set():
                return
            mono = time.monotonic()
            if state.changed_since_scan and (mono >= state.next_deletion_scan or force):
                stats = engine.sync_deletions(state.source, connector=connector)
                state.changed_since_scan = False
                state.next_deletion_scan = time.monotonic() + self.settings.deletion_scan_seconds
                self._synced(state, "deletions", stats)
        except LeaseLost as exc:     # another daemon holds the source now: not an error
            self.log.info("%s: %s", state.name, exc, extra={"event": "lease_lost", "source": state.name})
            self._close_connector(state)
            return
        except Exception as exc:  # one source's trouble must not stop the others
            self._failed(state, exc)
            return
        if not state.announced:
            # Consumers look at each source whole once per run, at its first good service
            # (write-back applies what an earlier run held, e.g. after `apply = true` was
            # switched on); later only at what changed.
            state.announced = True
            self._hooks(SyncEvent("start", state.source, None, self.store, self.engine))
        if state.failures:
            self.log.info("%s: recovered after %d error(s)", state.name, state.failures,
                          extra={"event": "recovered", "source": state.name, "errors": state.failures})
            state.failures, state.errors_suppressed, state.errors_logged_at = 0, 0, None
            if self._unwatched:
                self._watch_new_folders()

    def _schedule_deferred(self, state: _SourceState, connector: Connector) -> None:
        """A read that put work off (an unindexed updated_at scan) is redone when it is due,
        even if nothing else changes by then."""
        until = getattr(connector, "deferred_until", None)
        state.next_deferred = None if until is None else time.monotonic() + max(0.0, until - time.time())

    def _synced(self, state: _SourceState, kind: str, stats: SyncStats) -> None:
        self.syncs += 1
        state.checked_at = self.clock()
        fields = {"event": kind, "source": state.name, "rows_read": stats.rows_read, "records": stats.records,
                  "changed": stats.changed, "deleted": stats.deleted, "contradictions": stats.contradictions,
                  "ms": round(stats.seconds * 1000, 1)}
        if kind == "deletions":
            fields.update(keys_read=stats.keys_read, missing=stats.missing)
            level = logging.INFO if (stats.deleted or stats.missing) else logging.DEBUG
            self.log.log(level, "%s: deletion pass read %d key(s): %d deleted, %d missing row(s) synced",
                         state.name, stats.keys_read, stats.deleted, stats.missing, extra=fields)
        else:
            level = logging.INFO if (stats.changed or stats.deleted or kind == "full") else logging.DEBUG
            self.log.log(level, "%s: %s read %d row(s): %d changed, %d deleted in %.0f ms",
                         state.name, "full sync" if kind == "full" else "sync", stats.rows_read, stats.changed, stats.deleted, stats.seconds * 1000,
                         extra=fields)
        for w in stats.warnings[:5]:
            self.log.warning("%s: %s", state.name, w, extra={"event": "warning", "source": state.name})
        if state.connector is not None:
            state.connector.warnings.clear()   # a long-lived connector: each warning is told once
        self._hooks(SyncEvent(kind, state.source, stats, self.store, self.engine))

    def _failed(self, state: _SourceState, exc: BaseException) -> None:
        state.failures += 1
        delay = min(self.settings.backoff_max_seconds,
                    self.settings.backoff_initial_seconds * 2 ** (state.failures - 1))
        mono = time.monotonic()
        state.retry_at = mono + delay
        self._close_connector(state)
        message = str(exc) if isinstance(exc, MemwatchError) else f"{type(exc).__name__}: {exc}"
        message = message.splitlines()[0] if message else type(exc).__name__
        try:
            with self.store.transaction():
                self.store.ensure_source(state.name, state.source.connector, state.source.target,
                                         state.source.preset)
                self.store.record_error(state.name, message, self.clock())
        except Exception as store_exc:  # the overlay itself may be the problem
            message += f" (and the overlay could not record it: {store_exc})"
        due = state.errors_logged_at is None or mono - state.errors_logged_at >= self.settings.error_log_seconds
        if not due:
            state.errors_suppressed += 1
            return
        more = f" ({state.errors_suppressed} more since the last report)" if state.errors_suppressed else ""
        self.log.error("%s: %s; attempt %d, retrying in %.0f s%s", state.name, message, state.failures,
                       delay, more,
                       extra={"event": "error", "source": state.name, "error": message,
                              "attempt": state.failures, "retry_seconds": delay},
                       exc_info=None if isinstance(exc, (MemwatchError, OSError)) or _is_sqlite_error(exc) else exc)
        state.errors_logged_at = mono
        state.errors_suppressed = 0

    def _rescore(self) -> None:
        try:
            n = self.engine.rescore_due(self.clock(), source_ids=self._held_source_ids())
        except Exception as exc:
            self.log.error("rescore failed: %s", exc, extra={"event": "error", "error": str(exc)})
            return
        if n:
            self.log.info("rescored %d fact(s) whose label was due to change", n,
                          extra={"event": "rescore", "rescored": n})
            self._hooks(SyncEvent("rescore", None, None, self.store, self.engine, rescored=n))

    def _hooks(self, event: SyncEvent) -> None:
        for hook in self.after_sync:
            try:
                hook(event)
            except Exception as exc:
                name = getattr(hook, "__qualname__", repr(hook))
                self.log.error("after_sync hook %s failed: %s", name, exc,
                               extra={"event": "hook_error", "hook": name, "error": str(exc)},
                               exc_info=None if isinstance(exc, MemwatchError) else exc)

    # -- sources ------------------------------------------------------------------------
    def _initial_state(self, source: SourceConfig, mono: float) -> _SourceState:
        state = _SourceState(source)
        row = self.store.source_row(source.name)
        now = self.clock()
        s = self.settings
        if row is None or row["sync_count"] == 0 or row["cursor_json"] is None:
            state.needs_full = True
        elif row["config_hash"] != self.engine.fingerprint(source):
            state.needs_full = True
            self.log.info("%s: mapping, rules or scoring changed since the last full sync; syncing it fully",
                          source.name, extra={"event": "config_changed", "source": source.name})
        last_scan = row["last_deletion_scan"] if row is not None else None
        state.next_deletion_scan = mono + (0.0 if last_scan is None
                                           else max(0.0, last_scan + s.deletion_scan_seconds - now))
        if s.full_resync_seconds:
            last_full = row["last_full_sync"] if row is not None else None
            state.next_full = mono + (0.0 if last_full is None else max(0.0, last_full + s.full_resync_seconds - now))
        return state

    def _connector(self, state: _SourceState) -> Connector:
        if state.connector is None:
            connector = make_connector(state.source)
            if hasattr(connector, "busy_timeout"):
                connector.busy_timeout = self.settings.busy_timeout_seconds
            if hasattr(connector, "update_scan_seconds"):
                connector.update_scan_seconds = self.settings.update_scan_seconds
            if hasattr(connector, "yield_to_writer"):
                connector.yield_to_writer = True   # the bot runs beside us: pace rollback-journal reads
            connector.open()
            state.connector = connector
        return state.connector

    def _close_connector(self, state: _SourceState) -> None:
        if state.connector is not None:
            try:
                state.connector.close()
            except Exception:
                pass
            state.connector = None

    def _watch_paths(self, state: _SourceState) -> list[Path]:
        try:
            connector = state.connector or make_connector(state.source)
            return [Path(os.path.abspath(p)) for p in connector.watch_paths()]
        except Exception:
            return []

    # -- file events ----------------------------------------------------------------------
    def mark_dirty(self, name: str, reappeared: bool = False) -> None:
        """A file event for source `name` (called from the observer thread)."""
        mono = time.monotonic()
        with self._lock:
            for state in self.states:
                if state.name == name:
                    state.dirty = True
                    state.first_dirty = state.first_dirty or mono
                    state.last_dirty = mono
                    if reappeared:
                        state.retry_at = 0.0   # the file is back: do not wait out the backoff
        self._wake.set()

    def _start_observer(self) -> None:
        by_dir: dict[str, dict[str, tuple[str, bool]]] = {}
        for state in self.states:
            for i, p in enumerate(self._watch_paths(state)):
                by_dir.setdefault(str(p.parent), {})[str(p)] = (state.name, i == 0)
        if not by_dir:
            return
        self._handler = _Handler(self, {path: v for paths in by_dir.values() for path, v in paths.items()})
        self._unwatched = set(by_dir)
        observer = self._make_observer()
        self.observer = observer
        self._watch_new_folders()
        try:
            observer.start()
        except OSError as exc:
            self.observer = None
            if self.poll:
                raise
            self.log.warning("file events unavailable (%s); falling back to polling", exc,
                             extra={"event": "watch_failed"})
            self.poll = True
            self._start_observer()

    def _watch_new_folders(self) -> None:
        """Watch the folders that exist now (a source's folder may appear after start)."""
        from watchdog.events import (FileClosedEvent, FileCreatedEvent, FileDeletedEvent, FileModifiedEvent,
                                     FileMovedEvent)
        kinds = [FileModifiedEvent, FileCreatedEvent, FileDeletedEvent, FileMovedEvent, FileClosedEvent]
        if self.observer is None:
            return
        for folder in sorted(self._unwatched):
            if not os.path.isdir(folder):
                self.log.warning("cannot watch %s (no such folder yet); its sources are polled", folder,
                                 extra={"event": "watch_failed", "folder": folder})
                continue
            try:
                self.observer.schedule(self._handler, folder, recursive=False, event_filter=kinds)
            except OSError as exc:
                self.log.warning("cannot watch %s (%s); its sources are polled", folder, exc,
                                 extra={"event": "watch_failed", "folder": folder})
                continue
            self._unwatched.discard(folder)

    def _make_observer(self):
        if self.poll:
            from watchdog.observers.polling import PollingObserver
            return PollingObserver(timeout=POLLING_OBSERVER_INTERVAL)
        from watchdog.observers import Observer
        return Observer()

    # -- waiting and bookkeeping -------------------------------------------------------------
    def _sleep(self) -> None:
        mono = time.monotonic()
        deadline = mono + MAX_SLEEP
        deadline = min(deadline, self._next_rescore, self._next_heartbeat)
        with self._lock:
            for st in self.states:
                if st.dirty and st.last_dirty is not None:
                    ready = min(st.last_dirty + self.settings.debounce_seconds,
                                (st.first_dirty or mono) + self.settings.max_delay_seconds)
                    deadline = min(deadline, max(ready, st.retry_at))
                candidates = [st.next_poll]
                if st.changed_since_scan:
                    candidates.append(st.next_deletion_scan)
                if st.next_full is not None:
                    candidates.append(st.next_full)
                if st.next_deferred is not None:
                    candidates.append(st.next_deferred)
                deadline = min(deadline, max(min(candidates), st.retry_at))
        timeout = max(0.0, deadline - mono)
        if timeout > 0:
            self._wake.wait(timeout)
        self._wake.clear()

    def _daemon_meta(self) -> dict:
        return {"pid": os.getpid(), "host": socket.gethostname(), "started_at": self._started_at,
                "heartbeat": self.clock(), "heartbeat_seconds": self.settings.heartbeat_seconds,
                "sources": [s.name for s in self.states]}

    def _held_source_ids(self) -> list[int] | None:
        """Sources this daemon rescores: all of them, or with leases only those it holds."""
        if self.leases is None:
            return None
        rows = (self.store.source_row(name) for name in self.leases.held_names())
        return [r["id"] for r in rows if r is not None]

    def _balance_leases(self) -> None:
        """Give back what is over the fair share, take free sources; a source taken starts
        from what the overlay knows of it (cursor, last scans), as at daemon start."""
        names = [s.name for s in self.states]
        try:
            dropped = self.leases.take_lost() | set(self.leases.rebalance(names))
            taken = self.leases.claim(names)
        except MemwatchError as exc:
            self.log.error("leases: %s", exc, extra={"event": "error", "error": str(exc)})
            return
        mono = time.monotonic()
        for i, state in enumerate(self.states):
            if state.name in dropped:
                self._close_connector(state)
                self.log.info("%s: lease released", state.name, extra={"event": "lease_released", "source": state.name})
            if state.name in taken:
                self._close_connector(state)
                fresh = self._initial_state(state.source, mono)
                with self._lock:
                    self.states[i] = fresh
                self.log.info("%s: lease taken (epoch %d)", state.name, self.leases.held[state.name],
                              extra={"event": "lease_taken", "source": state.name})

    def _write_checked(self) -> None:
        checked = {s.name: s.checked_at for s in self.states if s.checked_at is not None
                   and (self.leases is None or self.leases.holds(s.name))}
        if checked:
            self.store.mark_checked(checked)

    def _heartbeat(self, force: bool = False) -> None:
        mono = time.monotonic()
        if not force and mono < self._next_heartbeat:
            return
        self._next_heartbeat = mono + self.settings.heartbeat_seconds
        try:
            with self.store.transaction():
                self._write_checked()
                self.store.set_meta("daemon", self._daemon_meta())
        except Exception as exc:
            self.log.error("cannot write the heartbeat to the overlay: %s", exc,
                           extra={"event": "error", "error": str(exc)})


class _Handler(FileSystemEventHandler):
    """watchdog handler: maps an event's path to its source and marks it dirty. Nothing else."""

    def __init__(self, daemon: Daemon, paths: dict[str, tuple[str, bool]]):
        super().__init__()
        self.daemon = daemon
        self.paths = paths

    def dispatch(self, event) -> None:
        arrivals = {"created": event.src_path, "moved": event.dest_path}
        for raw in (event.src_path, event.dest_path):
            hit = self.paths.get(os.fsdecode(raw)) if raw else None
            if hit is not None:
                name, main_file = hit
                self.daemon.mark_dirty(name, reappeared=main_file and raw == arrivals.get(event.event_type))


def _is_sqlite_error(exc: BaseException) -> bool:
    import sqlite3
    return isinstance(exc, sqlite3.Error)


# -- process entry point -------------------------------------------------------------------
def run_daemon(config: Config, *, overlay_path: str | None = None, poll: bool = False, once: bool = False,
               log: logging.Logger | None = None, hooks: "list[Callable[[SyncEvent], None]]" = ()) -> int:
    """Run the daemon in this process until a signal; returns the exit code.

    SIGTERM/SIGINT stop it after the transaction in progress (exit 0; 130 for SIGINT); a
    second signal exits at once (130 / 143): the overlay rolls the open transaction back
    and the next start resumes from the last committed cursor. `once`: one pass, exit 2
    if any source failed (the others are still synced).
    """
    daemon = Daemon(config, overlay_path=overlay_path, poll=poll, log=log)
    if config.actions:
        # [[actions]]: annotations every sync; writes to a source only with `apply = true`.
        from memwatch_overlay.overlay.writeback.daemon_hook import writeback_hook
        daemon.after_sync.append(writeback_hook(config))
    daemon.after_sync.extend(hooks)
    received: list[int] = []

    def on_signal(signum, _frame):
        received.append(signum)
        if len(received) > 1:
            os._exit(int(ExitStatus.INTERRUPTED) if signum == signal.SIGINT else 128 + signum)
        daemon.request_stop(signal.Signals(signum).name)

    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, on_signal)
    try:
        daemon.run(once=once)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if received and received[0] == signal.SIGINT:
        return int(ExitStatus.INTERRUPTED)
    if once and any(state.failures for state in daemon.states):
        return int(ExitStatus.BAD_INPUT)   # --once in a cron job: a failed source must show
    return int(ExitStatus.OK)
