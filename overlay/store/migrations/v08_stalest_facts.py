"""v8: the table's first rows without a scan. The console audit shows the live facts
stalest first (freshness, then id) and stops at 200; `facts_stalest` holds just the live
facts below STALEST_BELOW (what the default thresholds label expired), in that order, so
when 200 of them exist the table reads those 200 and no other fact
(reports.ReportsRepo.iter_stalest_rows; with fewer it reads the table as before).

SQLite only. On Postgres an index on `freshness` would stop every rescore from updating
rows in place (a HOT update needs no indexed column changed: schema._postgres_storage),
which costs more than the scan it saves; the Postgres overlay keeps the scan."""

SQL = """
    CREATE INDEX facts_stalest ON facts(freshness)
        WHERE status IN ('active', 'contradicted') AND (freshness < 0.3 OR freshness IS NULL);
    """
POSTGRES_SQL = ""
