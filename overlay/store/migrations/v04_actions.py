"""v4: write-back actions (overlay/store/actions.py): one row per applied action, with the
whole-row before/after images (typed) that undo restores from."""

SQL = """
    CREATE TABLE actions (
        id INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL,            -- one apply: every action of a `plan --apply`
        run_at REAL NOT NULL,
        source TEXT NOT NULL,
        tbl TEXT NOT NULL,
        ref TEXT NOT NULL,
        pk TEXT NOT NULL,                -- JSON: the overlay's text pk
        kind TEXT NOT NULL,              -- annotate | set | delete
        action_index INTEGER,            -- position in [[actions]]
        spec TEXT NOT NULL,              -- JSON of the [[actions]] entry that asked for it
        label TEXT,
        fact_hash TEXT,                  -- facts.content_hash the plan was made on
        after_hash TEXT,                 -- content hash of the row after the write
        key_json TEXT,                   -- typed key of the row
        before_json TEXT,                -- typed whole-row image before the write
        after_json TEXT,                 -- typed whole-row image after it (NULL after delete)
        values_json TEXT,                -- values written (or the annotation's values)
        sweepable INTEGER NOT NULL DEFAULT 0,  -- wrote the store's expiry: its sweeper may delete the row
        state TEXT NOT NULL,             -- pending | applied | failed
        undone_at REAL,
        note TEXT
    );
    CREATE INDEX actions_ref ON actions(ref);
    CREATE INDEX actions_run_at ON actions(run_at);
    CREATE INDEX actions_state ON actions(state) WHERE state = 'pending';
    """
