"""v7: the judge's verdict cache. An LLM critic's answer about one (older text, newer text)
pair, by model: asked once, reused by every later sync and audit of the overlay
(overlay/detect/judge.py)."""

SQL = """
    CREATE TABLE judge_verdicts (
        model TEXT NOT NULL,
        pair_hash TEXT NOT NULL,
        contradiction INTEGER NOT NULL,
        confidence REAL NOT NULL,
        reason TEXT NOT NULL,
        decided_at REAL NOT NULL,
        PRIMARY KEY (model, pair_hash)
    );
    """
