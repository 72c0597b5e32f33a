"""v3: confidence erosion. `confidence` is scored like freshness (see
overlay.engine.scoring); `confirmations` counts re-confirmations (refresh, same value re-added)."""

SQL = """
    ALTER TABLE facts ADD COLUMN confidence REAL;
    ALTER TABLE facts ADD COLUMN confirmations INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX facts_gc ON facts(status, last_seen);
    """
