"""A fleet member for tests/test_lease.py: claims source leases on a Postgres overlay and
syncs the sources it holds, in a loop, until STOP_FILE exists.

A tight loop (a full sync of every held source each pass) that exercises the lease module
harder than the daemon does; the lease module, the overlay and the sync engine are the real ones.

usage: python lease_worker.py OVERLAY_DSN CONFIG OWNER STOP_FILE
"""
import sys
import time
from pathlib import Path

from memwatch_overlay.overlay.store.leases import LeaseLost, Leases
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.rules.config import load_config


def main(dsn: str, config_path: str, owner: str, stop_file: str) -> None:
    config = load_config(config_path)
    store = OverlayStore(dsn)
    engine = SyncEngine(store, config)
    leases = Leases(dsn, owner=owner, heartbeat_seconds=0.5).start()
    engine.guard = leases.guard
    names = [s.name for s in config.sources]
    print(f"{owner} started", flush=True)
    while not Path(stop_file).exists():
        leases.rebalance(names)
        leases.claim(names)
        for source in config.sources:
            if leases.holds(source.name):
                try:
                    engine.sync(source, full=True)
                except LeaseLost as exc:
                    print(f"{owner} lost: {exc}", flush=True)
        time.sleep(0.05)
    leases.close()
    store.close()
    print(f"{owner} stopped", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:5])
