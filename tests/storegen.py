"""Small SQLite agent stores and configs for CLI tests (ages spread over years, seeded)."""
from __future__ import annotations

import datetime as dt
import os
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

AS_OF = "2026-11-29"
EXE = os.path.join(os.path.dirname(sys.executable), "memwatch-overlay")   # the installed console script
CATEGORIES = ("employment", "location", "preference", "contact", "general")


def make_store(path: Path, n: int = 60, seed: int = 1, as_of: str = AS_OF) -> Path:
    """A table `memories` the generic preset recognises: id, user_id, kind, fact_key, content, created_at."""
    rnd = random.Random(seed)
    now = dt.datetime.fromisoformat(as_of)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, user_id TEXT, kind TEXT, "
                 "fact_key TEXT, content TEXT, created_at TEXT)")
    rows = []
    for i in range(1, n + 1):
        days = rnd.choice((rnd.uniform(0, 60), rnd.uniform(60, 400), rnd.uniform(400, 3000)))
        created = (now - dt.timedelta(days=days)).strftime("%Y-%m-%d %H:%M:%S")
        kind = CATEGORIES[i % len(CATEGORIES)]
        rows.append((i, f"u{i % 4}", kind, f"{kind}_{i}", f"memory {i} about {kind} | <x>", created))
    conn.executemany("INSERT INTO memories VALUES (?, ?, ?, ?, ?, ?)", rows)
    conn.commit()
    conn.close()
    return path


def write_config(folder: Path, store: Path, ci: str = "", name: str = "bot") -> Path:
    """A memwatch.toml reading `store` as source `name`, with `ci` appended verbatim."""
    text = f'''
[overlay]
path = "overlay.db"

[[sources]]
name = "{name}"
connector = "sqlite"
path = "{store.name}"
table = "memories"
id = "id"
text = "content"
key = "fact_key"
subject = "user_id"
created_at = "created_at"
category = "kind"

{ci}
'''
    path = folder / "memwatch.toml"
    path.write_text(text)
    return path


def run(*args, cwd, **env):
    """Run the console script in `cwd`; GITHUB_* variables of the outer run are dropped."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    return subprocess.run([EXE, *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env={**base, "COLUMNS": "160", **env}, timeout=120)
