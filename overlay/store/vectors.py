"""The `fact_vectors` table: embedding vectors of facts, stamped with the model that made
them and a hash of the text they were made from; a row's blob holds one or more vectors of
`dim` floats (the fact's text, then its clauses). overlay/detect/embeddings.py decides what
to embed; this module only stores and reads."""
from __future__ import annotations

from typing import Iterable

from memwatch_overlay.overlay.store.sqlhelpers import RepoBase, placeholders


class VectorsRepo(RepoBase):
    """Mixin of OverlayStore: stored vectors."""

    def stored_vectors(self, fact_ids: list[int]) -> dict[int, tuple]:
        """fact_id -> (fact_id, model, text_hash, dim, vector bytes) of the facts that have one."""
        have = {}
        for i in range(0, len(fact_ids), 500):
            chunk = fact_ids[i:i + 500]
            for row in self.conn.execute(
                    f"SELECT fact_id, model, text_hash, dim, vector FROM fact_vectors "
                    f"WHERE fact_id IN ({placeholders(len(chunk))})", chunk):
                have[row[0]] = tuple(row)
        return have

    def save_vectors(self, rows: Iterable[tuple[int, str, int, str, bytes]]) -> None:
        """Store (fact_id, model, dim, text_hash, vector bytes), replacing a fact's old vector."""
        self.conn.executemany(
            "INSERT INTO fact_vectors (fact_id, model, dim, text_hash, vector) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (fact_id) DO UPDATE SET model = excluded.model, dim = excluded.dim, "
            "text_hash = excluded.text_hash, vector = excluded.vector", list(rows))

    def vectors_not_of(self, model_name: str) -> list[int]:
        """Facts whose stored vector another model made, fact id order."""
        return [r[0] for r in self.conn.execute(
            "SELECT fact_id FROM fact_vectors WHERE model != ? ORDER BY fact_id", (model_name,))]

    def texts_with_vectors_not_of(self, model_name: str, limit: int) -> list[tuple[int, str, str | None]]:
        """(fact_id, text, subject) of up to `limit` facts whose stored vector another model made."""
        return [(r[0], r[1], r[2]) for r in self.conn.execute(
            "SELECT v.fact_id, f.text, f.subject FROM fact_vectors v JOIN facts f ON f.id = v.fact_id "
            "WHERE v.model != ? LIMIT ?", (model_name, limit))]

    def vector_models(self) -> dict[str, int]:
        """model -> how many facts have a vector of it."""
        return dict(self.conn.execute("SELECT model, count(*) FROM fact_vectors GROUP BY model").fetchall())
