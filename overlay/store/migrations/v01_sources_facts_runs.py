"""v1: sources, facts, contradictions, runs"""

SQL = """
    CREATE TABLE sources (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        connector TEXT NOT NULL,
        target TEXT NOT NULL,
        preset TEXT,
        cursor_json TEXT,
        sync_count INTEGER NOT NULL DEFAULT 0,
        last_sync REAL,
        last_change REAL,
        rows_seen INTEGER NOT NULL DEFAULT 0,
        rows_read_last_sync INTEGER NOT NULL DEFAULT 0,
        errors INTEGER NOT NULL DEFAULT 0,
        last_error TEXT
    );
    CREATE TABLE facts (
        id INTEGER PRIMARY KEY,
        source_id INTEGER NOT NULL REFERENCES sources(id),
        tbl TEXT NOT NULL,
        pk TEXT NOT NULL,                -- JSON object of the source's primary-key values (text)
        ref TEXT NOT NULL,
        subject TEXT,
        key TEXT,
        text TEXT NOT NULL,
        category TEXT NOT NULL,
        created_at REAL,
        updated_at REAL,
        accessed_at REAL,
        access_count INTEGER NOT NULL DEFAULT 0,
        expires_at REAL,                 -- expiry recorded by the source itself
        refreshed_at REAL,               -- `memwatch-overlay refresh`: re-confirmed by a person
        content_hash TEXT NOT NULL,
        first_seen REAL NOT NULL,
        last_seen REAL NOT NULL,
        seen_sync INTEGER NOT NULL,      -- sources.sync_count of the last full read that saw it
        changed_sync INTEGER NOT NULL,   -- sync that last inserted it or changed its content
        status TEXT NOT NULL DEFAULT 'active',   -- active | contradicted | deleted | forgotten
        freshness REAL,
        label TEXT,
        age_days REAL,
        days_left REAL,
        days_until_expired REAL,
        expired_by TEXT,
        scored_as_of REAL,
        UNIQUE (source_id, pk)
    );
    CREATE UNIQUE INDEX facts_ref ON facts(ref);
    CREATE INDEX facts_block ON facts(subject, category);
    CREATE INDEX facts_changed ON facts(source_id, changed_sync);
    CREATE TABLE contradictions (
        id INTEGER PRIMARY KEY,
        older_id INTEGER NOT NULL REFERENCES facts(id) ON DELETE CASCADE,
        newer_id INTEGER NOT NULL REFERENCES facts(id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        confidence REAL NOT NULL,
        evidence TEXT NOT NULL,
        update_json TEXT,
        detected_at REAL NOT NULL,
        UNIQUE (older_id, newer_id)
    );
    CREATE INDEX contradictions_newer ON contradictions(newer_id);
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        started_at REAL NOT NULL,
        as_of REAL NOT NULL,
        kind TEXT NOT NULL,
        sources TEXT NOT NULL,
        passed INTEGER,
        summary_json TEXT NOT NULL
    );
    """
