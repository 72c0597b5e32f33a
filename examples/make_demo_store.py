"""Build examples/my_agent.db: a home-made agent memory table, as a small bot might keep.

Ages are relative to 2026-11-29 (audit with --as-of 2026-11-29). Run again to rebuild;
the output is deterministic.
"""
import datetime as dt
import sqlite3
from pathlib import Path

REFERENCE = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.timezone.utc)
FACTS = [
    # user, key, value, kind, age_days, last_used_days_ago, hits
    ("u1", "employer", "Works at Google as a product analyst", "employment", 540, 200, 3),
    ("u1", "city", "Lives in Jakarta", "location", 700, None, 0),
    ("u1", "email", "priya@example.com", "contact", 420, 30, 5),
    ("u1", "food", "Loves Thai food", None, 300, 10, 8),
    ("u1", "employer", "Just joined Stripe as a staff engineer", "employment", 6, None, 0),
    ("u1", "city", "Moved to Surabaya last month", "location", 35, None, 0),
    ("u2", "language", "Speaks French fluently", None, 260, None, 0),
    ("u2", "seat", "Prefers window seats on flights", None, 8, 2, 2),
    ("u2", "promo", "Remind about the design-conference early-bird discount", None, 400, None, 0),
    ("u2", "pet", "Adopted a beagle named Biscuit", None, 3, None, 0),
    ("u3", "title", "Job title is senior data scientist", "employment", 400, 100, 1),
    ("u3", "belief", "Believes electric cars are the future of city transport", None, 90, None, 0),
]


def build(path: Path) -> None:
    path.unlink(missing_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("""CREATE TABLE agent_facts (
        id INTEGER PRIMARY KEY, user_id TEXT NOT NULL, fact_key TEXT, fact_value TEXT NOT NULL,
        kind TEXT, created_at TEXT NOT NULL, updated_at TEXT, last_used TEXT, hits INTEGER DEFAULT 0,
        expires_at TEXT, is_deleted INTEGER DEFAULT 0)""")
    fmt = "%Y-%m-%d %H:%M:%S"
    for user, key, value, kind, age, used, hits in FACTS:
        created = (REFERENCE - dt.timedelta(days=age)).strftime(fmt)
        last = (REFERENCE - dt.timedelta(days=used)).strftime(fmt) if used is not None else None
        conn.execute("INSERT INTO agent_facts (user_id, fact_key, fact_value, kind, created_at, updated_at,"
                     " last_used, hits) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                     (user, key, value, kind, created, created, last, hits))
    conn.commit()
    conn.close()


if __name__ == "__main__":
    build(Path(__file__).with_name("my_agent.db"))
