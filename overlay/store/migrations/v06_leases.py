"""v6: several daemons on one (Postgres) overlay (overlay/store/leases.py). `leases` names the
daemon that holds each source's advisory lock; `epoch` grows at every takeover and
fences a sync of the previous holder. `sync_events` records who synced what, when."""

SQL = """
    CREATE TABLE leases (
        source TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        host TEXT,
        pid INTEGER,
        epoch INTEGER NOT NULL,
        acquired_at REAL NOT NULL,
        heartbeat_at REAL NOT NULL
    );
    CREATE TABLE sync_events (
        id INTEGER PRIMARY KEY,
        source TEXT NOT NULL,
        owner TEXT NOT NULL,
        epoch INTEGER NOT NULL,
        started_at REAL NOT NULL,
        finished_at REAL
    );
    CREATE INDEX sync_events_source ON sync_events(source, started_at);
    CREATE TABLE fleet_members (
        owner TEXT PRIMARY KEY,
        host TEXT,
        pid INTEGER,
        joined_at REAL NOT NULL,
        heartbeat_at REAL NOT NULL
    );
    """
