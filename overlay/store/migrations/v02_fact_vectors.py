"""v2: embedding vectors of facts, stamped with the model that made them (semantic layer)"""

SQL = """
    CREATE TABLE fact_vectors (
        fact_id INTEGER PRIMARY KEY REFERENCES facts(id) ON DELETE CASCADE,
        model TEXT NOT NULL,
        dim INTEGER NOT NULL,
        text_hash TEXT NOT NULL,
        vector BLOB NOT NULL
    );
    CREATE INDEX fact_vectors_model ON fact_vectors(model);
    """
