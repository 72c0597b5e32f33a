"""v5: the daemon. `next_change` is the epoch at which a live fact's label next changes
with nothing else changing (NULL: never, or not live); the scheduled rescore reads
only `next_change <= now` through its index. Existing facts start due (0)."""

SQL = """
    ALTER TABLE facts ADD COLUMN next_change REAL;
    UPDATE facts SET next_change = CASE WHEN status IN ('active', 'contradicted') THEN 0 END;
    CREATE INDEX facts_next_change ON facts(next_change);
    ALTER TABLE sources ADD COLUMN config_hash TEXT;
    ALTER TABLE sources ADD COLUMN last_full_sync REAL;
    ALTER TABLE sources ADD COLUMN last_deletion_scan REAL;
    ALTER TABLE sources ADD COLUMN keys_read_last_scan INTEGER;
    ALTER TABLE sources ADD COLUMN last_checked REAL;
    ALTER TABLE sources ADD COLUMN consecutive_errors INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sources ADD COLUMN last_error_at REAL;
    CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    """
