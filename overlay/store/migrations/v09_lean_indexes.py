"""v9: narrower `facts` indexes, each holding only what its readers look up.

- `facts_gc` keeps its (status, last_seen) key but indexes only the facts that are not
  `active`: its readers look up `contradicted`, `deleted` or `forgotten` facts (the
  contradiction-status pass, gc's prune, the summary's deleted count), never active ones.
  The condition is spelt as ORs of equalities so that SQLite's planner can prove that a
  query's `status = 'deleted'` implies it (it does not prove that of `!= 'active'` or IN).
  Most facts are active, so on a first audit this index is almost empty.
- `facts_block` is on subject alone: a detection block is one subject's facts, and the
  index's own rowid order then also gives the subject scan's `ORDER BY subject, id`.
  `check` narrows a subject's few facts by category after the lookup.
- `facts_next_change` leaves out facts whose label never changes again (NULL: expired,
  deleted, forgotten); the scheduled rescore's `next_change <= ?` implies NOT NULL.

Only indexes change: every fact, action, contradiction and run stays as it was.
"""

SQL = """
    DROP INDEX facts_gc;
    CREATE INDEX facts_gc ON facts(status, last_seen)
        WHERE status = 'contradicted' OR status = 'deleted' OR status = 'forgotten';
    DROP INDEX facts_block;
    CREATE INDEX facts_block ON facts(subject);
    DROP INDEX facts_next_change;
    CREATE INDEX facts_next_change ON facts(next_change) WHERE next_change IS NOT NULL;
    """
