"""v10: `facts.category_given`, the category text the source gave for a fact (its mapped
category column or field), NULL when it gave none.

`category` alone is the result (the source's category, else the rules' category from the
text), so a re-audit could not tell "given employment" from "categorised as employment":
a source row whose category column was cleared, its text unchanged, kept the category it
had been given instead of falling back to the rules. The re-audit's comparisons
(overlay/store/compare.py in SQL, SyncEngine._unchanged_test in Python) compare the given
category too, so clearing, setting or changing it is a change.

Existing facts get NULL ("not given"), not a guess and no rewrite of the table (the
migration only adds the column). What that costs, and what it cannot see:
- a source that maps no category column (most stores, zero-config audits of unknown
  tables): nothing; NULL is exactly what its facts would hold;
- a fact whose source row does give a category: the first full re-audit after the upgrade
  finds "given X" against NULL and rewrites that fact once (its content hash, which holds
  the resulting category, is unchanged: no new changed_sync, no detection, a `forgotten`
  fact stays forgotten). Such rows never matched the SQL comparison anyway (it matches
  only rows whose category column is empty), so that re-audit already built and
  categorised their Records; the extra cost is their upsert, once;
- a category cleared between the last audit before the upgrade and the first after it is
  not seen (the old overlay never recorded that it was given): that fact is categorised
  again at its next change. Guessing "given" for every fact (category_given = category)
  would instead rewrite every fact of every source once, the very storm this avoids.
"""

SQL = """
    ALTER TABLE facts ADD COLUMN category_given TEXT;
    """
