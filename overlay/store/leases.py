"""Source leases: several daemons share one Postgres overlay, each source synced by one.

Why advisory locks and not a coordinator: Postgres already knows which sessions are
alive. A daemon holds `pg_try_advisory_lock(key(source))` on a session of its own (the
lease session); while that session lives, no other daemon can take the source. When the
daemon dies (kill -9, crash, lost host) the server ends the session and the lock frees;
`idle_session_timeout` (a few heartbeats) also ends the session of a daemon that hangs
without dying, since the heartbeat thread is what keeps the session busy.

The lock decides; two tables tell:
- `leases` (one row per source: owner, epoch, heartbeat_at). Every takeover increments
  `epoch`. A sync runs inside `Leases.guard()`, which locks the source's row FOR UPDATE in
  the sync's own transaction and checks owner and epoch: a daemon that lost its lease
  (its session ended while it was busy) cannot commit a sync any more, and a takeover waits
  for a sync in flight to commit. Two syncs of one source never overlap.
- `fleet_members` (one row per daemon; each also holds a member advisory lock on its lease
  session, which is how the others tell it is alive): a daemon claims at most its fair
  share, ceil(sources / live members), and gives back what is over it when others join.
- `sync_events` records every committed sync: source, owner, epoch, start and end (server
  clock), so overlap can be checked after the fact.

Example:
    leases = Leases(dsn, owner="daemon-a").start()
    for name in leases.claim(["bot", "crm"]):
        ...
    with store.transaction(), leases.guard(store, "bot"):
        ...  # the sync
"""
from __future__ import annotations

import contextlib
import hashlib
import math
import os
import socket
import threading
import time
import uuid
from typing import Any, Iterable, Iterator

from memwatch_overlay.core.errors import ConfigError, OverlayError
from memwatch_overlay.core.redact import redact_dsn

DEFAULT_HEARTBEAT_SECONDS = 3.0
DEFAULT_SYNC_IDLE_SECONDS = 120.0   # a fenced sync's transaction may idle this long between statements
MISSED_HEARTBEATS = 4          # the server ends a lease session idle this many heartbeats
_KEY_PREFIX = b"memwatch-overlay:source:"
_MEMBER_PREFIX = b"memwatch-overlay:member:"
_NOW = "extract(epoch from clock_timestamp())"


class LeaseLost(OverlayError):
    """This daemon no longer holds the source's lease: another daemon owns it now."""


def lock_key(source: str, prefix: bytes = _KEY_PREFIX) -> int:
    """The advisory-lock key of a source: a signed 64-bit hash of its name."""
    digest = hashlib.blake2b(prefix + source.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def member_key(owner: str) -> int:
    """A daemon holds this lock for as long as its lease session lives: how others see it is alive."""
    return lock_key(owner, _MEMBER_PREFIX)


class Leases:
    """This daemon's leases on one Postgres overlay (a dedicated session holds the locks)."""

    def __init__(self, dsn: str, owner: str | None = None,
                 heartbeat_seconds: float = DEFAULT_HEARTBEAT_SECONDS,
                 sync_idle_seconds: float = DEFAULT_SYNC_IDLE_SECONDS):
        try:
            import psycopg
        except ImportError:
            raise OverlayError("leases need psycopg: pip install 'memwatch-overlay[postgres]'") from None
        self._psycopg = psycopg
        self.dsn = dsn
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.heartbeat_seconds = heartbeat_seconds
        self.sync_idle_seconds = sync_idle_seconds
        self.held: dict[str, int] = {}          # source -> epoch of our claim
        self.lost: set[str] = set()             # lost since the last `take_lost()`
        self._lock = threading.RLock()          # the session is used by the caller and the heartbeat
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.session: Any = None                # a psycopg connection once _connect() ran
        self._connect()

    # -- session -----------------------------------------------------------------------
    def _connect(self) -> None:
        idle_ms = int(self.heartbeat_seconds * MISSED_HEARTBEATS * 1000)
        try:
            self.session = self._psycopg.connect(
                self.dsn, autocommit=True, connect_timeout=10,
                application_name=f"memwatch-overlay lease {self.owner}"[:63],
                options=f"-c idle_session_timeout={idle_ms} -c lock_timeout={idle_ms}")
            self.session.execute("SELECT pg_advisory_lock(%s)", (member_key(self.owner),))
            self._beat()
        except self._psycopg.Error as exc:
            raise OverlayError(f"{redact_dsn(self.dsn)}: cannot open the lease session "
                               f"({redact_dsn(_first_line(exc))})") from None

    def _alive(self) -> bool:
        return self.session is not None and not self.session.closed and not self.session.broken

    def _drop_all(self) -> None:
        """The session is gone, and with it every lock we held."""
        self.lost |= set(self.held)
        self.held.clear()
        if self.session is not None:
            with contextlib.suppress(Exception):
                self.session.close()
        self.session = None

    def _beat(self) -> None:
        self.session.execute(
            f"INSERT INTO fleet_members (owner, host, pid, joined_at, heartbeat_at) VALUES (%s, %s, %s, {_NOW}, {_NOW}) "
            f"ON CONFLICT (owner) DO UPDATE SET heartbeat_at = {_NOW}",
            (self.owner, socket.gethostname(), os.getpid()))
        if self.held:
            self.session.execute(f"UPDATE leases SET heartbeat_at = {_NOW} WHERE owner = %s AND source = ANY(%s)",
                                 (self.owner, list(self.held)))

    def heartbeat(self) -> set[str]:
        """Refresh the heartbeat rows; returns the sources lost (session gone) since last asked."""
        with self._lock:
            if self._alive():
                try:
                    self._beat()
                except self._psycopg.Error:
                    self._drop_all()
            else:
                self._drop_all()
            return self.take_lost()

    def take_lost(self) -> set[str]:
        with self._lock:
            lost, self.lost = self.lost, set()
            return lost

    def start(self) -> "Leases":
        """Heartbeat on a thread of its own, so a long sync never lets the session idle out."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="memwatch-lease-heartbeat", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.heartbeat_seconds):
            with self._lock:
                if not self._alive():
                    self._drop_all()
                    continue
                try:
                    self._beat()
                except self._psycopg.Error:
                    self._drop_all()

    # -- claiming ------------------------------------------------------------------------
    def live_members(self) -> int:
        """Daemons whose lease session is alive (their member lock is held); forgets the dead."""
        count = 1
        for (other,) in self.session.execute("SELECT owner FROM fleet_members WHERE owner != %s",
                                             (self.owner,)).fetchall():
            if self.session.execute("SELECT pg_try_advisory_lock(%s)", (member_key(other),)).fetchone()[0]:
                self.session.execute("SELECT pg_advisory_unlock(%s)", (member_key(other),))
                self.session.execute("DELETE FROM fleet_members WHERE owner = %s", (other,))
            else:
                count += 1
        return count

    def fair_share(self, n_sources: int) -> int:
        return math.ceil(n_sources / self.live_members())

    def claim(self, sources: Iterable[str]) -> list[str]:
        """Try to take sources nobody holds, up to this daemon's fair share; returns those taken.

        A session that ended is reopened first (its leases were already lost)."""
        sources = list(dict.fromkeys(sources))
        taken: list[str] = []
        with self._lock:
            if not self._alive():
                self._drop_all()
                self._connect()
            try:
                self._claim(sources, taken)
            except self._psycopg.Error as exc:
                self._drop_all()
                raise OverlayError(f"{redact_dsn(self.dsn)}: lease session failed "
                                   f"({redact_dsn(_first_line(exc))})") from None
        return taken

    def _claim(self, sources: list[str], taken: list[str]) -> None:
        share = self.fair_share(len(sources))
        for name in sources:
            if len(self.held) >= share:
                break
            if name in self.held:
                continue
            got = self.session.execute("SELECT pg_try_advisory_lock(%s)", (lock_key(name),)).fetchone()[0]
            if not got:
                continue
            # Waits for a sync of the previous holder still in flight (its guard locks this
            # row); lock_timeout bounds the wait, and the source is tried again later.
            try:
                epoch = self._take_row(name)
            except self._psycopg.errors.LockNotAvailable:
                self.session.execute("SELECT pg_advisory_unlock(%s)", (lock_key(name),))
                continue
            self.held[name] = epoch
            taken.append(name)

    def _take_row(self, name: str) -> int:
        return self.session.execute(
            f"INSERT INTO leases (source, owner, host, pid, epoch, acquired_at, heartbeat_at) "
            f"VALUES (%s, %s, %s, %s, 1, {_NOW}, {_NOW}) ON CONFLICT (source) DO UPDATE SET "
            "owner = excluded.owner, host = excluded.host, pid = excluded.pid, "
            "epoch = leases.epoch + 1, acquired_at = excluded.acquired_at, "
            "heartbeat_at = excluded.heartbeat_at RETURNING epoch",
            (name, self.owner, socket.gethostname(), os.getpid())).fetchone()[0]

    def rebalance(self, sources: Iterable[str]) -> list[str]:
        """Give back leases over the fair share (call between syncs); returns those released."""
        sources = list(dict.fromkeys(sources))
        with self._lock:
            if not self._alive():
                return []
            extra = len(self.held) - self.fair_share(len(sources))
            released = sorted(self.held)[-extra:] if extra > 0 else []
            for name in released:
                self.release(name)
            return released

    def release(self, name: str) -> None:
        with self._lock:
            if self.held.pop(name, None) is None or not self._alive():
                return
            self.session.execute("SELECT pg_advisory_unlock(%s)", (lock_key(name),))

    def holds(self, name: str) -> bool:
        return name in self.held

    def held_names(self) -> list[str]:
        with self._lock:
            return sorted(self.held)

    @contextlib.contextmanager
    def guard(self, store, source: str) -> Iterator[None]:
        """Fence one sync (call inside the sync's transaction on the overlay store).

        Locks the source's lease row until the transaction ends and checks that we are
        still its owner at the epoch we claimed; records the sync in `sync_events`.
        """
        if getattr(store, "dialect", None) != "postgres":
            raise ConfigError("leases need the overlay on Postgres ([overlay] dsn)", field="overlay.dsn")
        epoch = self.held.get(source)
        if epoch is None:
            raise LeaseLost(f"{source}: this daemon does not hold the lease")
        row = store.conn.execute("SELECT owner, epoch FROM leases WHERE source = ? FOR UPDATE",
                                 (source,)).fetchone()
        if row is None or row[0] != self.owner or row[1] != epoch:
            with self._lock:
                if self.held.get(source) == epoch:
                    self.held.pop(source)
                    self.lost.add(source)
            raise LeaseLost(f"{source}: the lease was taken over by {row[0] if row else 'nobody'}")
        # A daemon that hangs mid-sync must not hold the lease row (and so the takeover) forever.
        store.conn.execute(f"SET LOCAL idle_in_transaction_session_timeout = {int(self.sync_idle_seconds * 1000)}")
        event = store.conn.execute(
            f"INSERT INTO sync_events (source, owner, epoch, started_at) VALUES (?, ?, ?, {_NOW})",
            (source, self.owner, epoch)).lastrowid
        yield
        store.conn.execute(f"UPDATE sync_events SET finished_at = {_NOW} WHERE id = ?", (event,))

    # -- end -----------------------------------------------------------------------------
    def close(self) -> None:
        """Release every lease and leave the fleet (idempotent)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=self.heartbeat_seconds + 5)
        with self._lock:
            if self._alive():
                with contextlib.suppress(self._psycopg.Error):
                    self.session.execute("SELECT pg_advisory_unlock_all()")
                    self.session.execute("DELETE FROM fleet_members WHERE owner = %s", (self.owner,))
            self.held.clear()
            if self.session is not None:
                self.session.close()
            self.session = None

    def __enter__(self) -> "Leases":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def held_advisory_locks(store) -> set[int]:
    """Keys (signed 64-bit, as lock_key gives them) of every advisory lock some session holds.

    Read from `pg_locks`, which shows a bigint key as classid (high half) and objid (low
    half); looking there never takes a lock, so status cannot disturb a daemon's claim."""
    held = set()
    for classid, objid in store.conn.execute(
            "SELECT classid::bigint, objid::bigint FROM pg_locks WHERE locktype = 'advisory' "
            "AND granted AND objsubid = 1").fetchall():
        key = (classid << 32) | objid
        held.add(key - (1 << 64) if key >= 1 << 63 else key)
    return held


def lease_table(store, held: set[int]) -> list[dict]:
    """Who holds which source (for status output): the `leases` rows with heartbeat age, and
    whether the lease's lock is in `held` (held_advisory_locks()) now; False: its daemon died
    and nobody took the source over yet."""
    rows = store.conn.execute("SELECT source, owner, host, pid, epoch, acquired_at, heartbeat_at "
                              "FROM leases ORDER BY source").fetchall()
    now = time.time()
    return [{"source": r[0], "owner": r[1], "host": r[2], "pid": r[3], "epoch": r[4],
             "acquired_at": r[5], "heartbeat_age_seconds": round(now - r[6], 1),
             "held": lock_key(r[0]) in held} for r in rows]


def fleet_table(store, leases: list[dict], held: set[int]) -> list[dict]:
    """The daemons sharing this overlay (status output): one entry per `fleet_members` row,
    `alive` when its member lock is in `held`, with the sources whose lease (lease_table()'s
    rows) it really holds."""
    sources: dict[str, list[str]] = {}
    for lease in leases:
        if lease["held"]:
            sources.setdefault(lease["owner"], []).append(lease["source"])
    now = time.time()
    return [{"owner": r[0], "host": r[1], "pid": r[2], "joined_at": r[3],
             "heartbeat_age_seconds": round(now - r[4], 1), "alive": member_key(r[0]) in held,
             "sources": sources.get(r[0], [])}
            for r in store.conn.execute("SELECT owner, host, pid, joined_at, heartbeat_at FROM fleet_members "
                                        "ORDER BY joined_at, owner").fetchall()]
