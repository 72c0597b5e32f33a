"""The `judge_verdicts` table: what the LLM critic answered about a pair of texts, by model
(overlay/detect/judge.py decides what to ask; this module only stores and reads)."""
from __future__ import annotations

import time

from memwatch_overlay.overlay.store.sqlhelpers import RepoBase, placeholders


class VerdictsRepo(RepoBase):
    """Mixin of OverlayStore: the judge's verdict cache (a `judge.VerdictStore`)."""

    def get_verdicts(self, model: str, keys: list[str]) -> dict[str, tuple[bool, float, str]]:
        """pair hash -> (contradiction, confidence, reason) of the pairs already decided."""
        out = {}
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            for k, flag, conf, reason in self.conn.execute(
                    f"SELECT pair_hash, contradiction, confidence, reason FROM judge_verdicts "
                    f"WHERE model = ? AND pair_hash IN ({placeholders(len(chunk))})", (model, *chunk)):
                out[k] = (bool(flag), conf, reason)
        return out

    def put_verdicts(self, model: str, rows: list[tuple[str, tuple[bool, float, str]]]) -> None:
        now = time.time()
        self.conn.executemany(
            "INSERT INTO judge_verdicts (model, pair_hash, contradiction, confidence, reason, decided_at) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (model, pair_hash) DO UPDATE SET "
            "contradiction = excluded.contradiction, confidence = excluded.confidence, "
            "reason = excluded.reason, decided_at = excluded.decided_at",
            [(model, k, int(flag), conf, reason, now) for k, (flag, conf, reason) in rows])

    def verdict_count(self, model: str | None = None) -> int:
        if model is None:
            return self.conn.execute("SELECT count(*) FROM judge_verdicts").fetchone()[0]
        return self.conn.execute("SELECT count(*) FROM judge_verdicts WHERE model = ?", (model,)).fetchone()[0]
