"""The `contradictions` table: supersession edges between facts (older_id outdated by
newer_id), with how they were found, and the `contradicted` status they give a fact."""
from __future__ import annotations

from typing import Iterable, Iterator

from memwatch_overlay.core import fastjson as jsontext
from memwatch_overlay.overlay.store.sqlhelpers import RepoBase, placeholders, plain_rows, scope

# json.dumps(update) with its C encoder built once (a first audit of 1M facts stores ~470k updates)
_dumps = jsontext.encoder(ensure_ascii=True)


def update_text(update: dict | None) -> str | None:
    """What `contradictions.update_json` holds for a contradiction's update (json.dumps)."""
    return _dumps(update) if update else None


# The contradictions a report shows: the older fact neither deleted nor forgotten, the newer not deleted.
REPORTED_CONTRADICTIONS = (
    "FROM contradictions c JOIN facts o ON o.id = c.older_id JOIN facts n ON n.id = c.newer_id "
    "WHERE o.status != 'deleted' AND o.status != 'forgotten' AND n.status != 'deleted'")


class ContradictionsRepo(RepoBase):
    """Mixin of OverlayStore: storing, clearing and reading contradictions."""

    def add_contradiction(self, older_id: int, newer_id: int, kind: str, confidence: float,
                          evidence: str, update: dict | None, now: float) -> bool:
        """Store the edge (its kind, confidence, evidence and update replace a stored one's);
        True when the pair was not stored yet."""
        update_json = update_text(update)
        if self.conn.execute(
                "INSERT INTO contradictions (older_id, newer_id, kind, confidence, evidence, update_json, detected_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (older_id, newer_id) DO NOTHING",
                (older_id, newer_id, kind, confidence, evidence, update_json, now)).rowcount:
            return True
        self.conn.execute("UPDATE contradictions SET kind = ?, confidence = ?, evidence = ?, update_json = ? "
                          "WHERE older_id = ? AND newer_id = ?",
                          (kind, confidence, evidence, update_json, older_id, newer_id))
        return False

    def add_new_contradictions(self, rows: list[tuple], now: float) -> int:
        """Insert (older_id, newer_id, kind, confidence, evidence, update_json) rows
        (update_json: `update_text(update)`), keeping any pair already stored as it is;
        returns how many were new."""
        cur = self.conn.executemany(
            "INSERT INTO contradictions (older_id, newer_id, kind, confidence, evidence, update_json, detected_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (older_id, newer_id) DO NOTHING",
            [(*row, now) for row in rows])
        return cur.rowcount

    def detected_edges_of(self, older_ids: list[int]) -> set[tuple[int, int]]:
        """(older_id, newer_id) of the detector's stored edges outdating these facts (the
        source's own records, stored without an update, are not the detector's)."""
        out: set[tuple[int, int]] = set()
        for i in range(0, len(older_ids), 500):
            chunk = older_ids[i:i + 500]
            out.update((o, n) for o, n in self.conn.execute(
                f"SELECT older_id, newer_id FROM contradictions WHERE older_id IN ({placeholders(len(chunk))}) "
                "AND update_json IS NOT NULL", chunk))
        return out

    def delete_edges(self, edges: Iterable[tuple[int, int]]) -> None:
        self.conn.executemany("DELETE FROM contradictions WHERE older_id = ? AND newer_id = ?", list(edges))

    def clear_contradictions_of(self, fact_ids: Iterable[int]) -> None:
        """Changed facts are judged again from scratch."""
        self.conn.executemany("DELETE FROM contradictions WHERE older_id = ? OR newer_id = ?",
                              ((i, i) for i in fact_ids))

    def apply_contradiction_status(self, source_id: int | None = None, fact_ids: Iterable[int] | None = None) -> None:
        """status = contradicted exactly for live facts a live newer fact contradicts.

        Only facts that are contradicted now or are the older side of a stored contradiction
        can change; every other live fact is active and stays so. Looking at those alone
        (status index, contradictions table) keeps a one-row sync from touching every fact.
        With `fact_ids`, only those facts are recomputed (an incremental sync passes the
        facts it touched and their older partners: `older_partners()`).
        """
        status = ("CASE WHEN EXISTS (SELECT 1 FROM contradictions c JOIN facts n "
                  "ON n.id = c.newer_id WHERE c.older_id = facts.id AND n.status IN ('active', 'contradicted')) "
                  "THEN 'contradicted' ELSE 'active' END")
        # (only rows whose status moves are written: a re-audit of an unchanged store rewrote
        # every contradicted fact with the status it had)
        sql = f"UPDATE facts SET status = {status} WHERE status IN ('active', 'contradicted') AND status <> {status}"
        if fact_ids is not None:
            self.conn.executemany(sql + " AND id = ?", ((i,) for i in fact_ids))
            return
        where = "" if source_id is None else f" AND source_id = {int(source_id)}"
        self.conn.execute(
            sql + " AND id IN (SELECT id FROM facts WHERE status = 'contradicted' UNION SELECT older_id "
            f"FROM contradictions){where}")

    def mark_contradicted(self, fact_ids: Iterable[int]) -> None:
        """status = contradicted for these active facts (the older sides of edges just stored
        between live facts, when nothing else can make a fact contradicted: see
        blocks.detect_changed's ``mark_status``)."""
        self.conn.executemany("UPDATE facts SET status = 'contradicted' WHERE id = ? AND status = 'active'",
                              ((i,) for i in fact_ids))

    def has_contradicted_status(self) -> bool:
        """Whether any fact's status is contradicted (the status index answers)."""
        return self.conn.execute("SELECT 1 FROM facts WHERE status = 'contradicted' LIMIT 1").fetchone() is not None

    def clear_contradicted_status(self) -> None:
        """Every contradicted fact becomes active (when no contradiction is stored at all:
        cheaper than apply_contradiction_status, and no rewrite of every fact)."""
        self.conn.execute("UPDATE facts SET status = 'active' WHERE status = 'contradicted'")

    def has_contradictions(self) -> bool:
        return self.conn.execute("SELECT 1 FROM contradictions LIMIT 1").fetchone() is not None

    def older_partners(self, fact_ids: Iterable[int]) -> set[int]:
        """Facts that these (newer) facts contradict: their status depends on these."""
        out: set[int] = set()
        for i in fact_ids:
            out.update(r[0] for r in self.conn.execute("SELECT older_id FROM contradictions WHERE newer_id = ?", (i,)))
        return out

    def contradicted_by(self, fact_id: int) -> list[str]:
        """Refs of the newer facts that contradict this fact, ref order."""
        return [r[0] for r in self.conn.execute(
            "SELECT n.ref FROM contradictions c JOIN facts n ON n.id = c.newer_id "
            "WHERE c.older_id = ? ORDER BY n.ref", (fact_id,))]

    def contradicts(self, fact_id: int) -> list[str]:
        """Refs of the older facts this (newer) fact contradicts, ref order."""
        return [r[0] for r in self.conn.execute(
            "SELECT o.ref FROM contradictions c JOIN facts o ON o.id = c.older_id WHERE c.newer_id = ? "
            "ORDER BY o.ref", (fact_id,))]

    def iter_contradictions(self, source_ids: list[int] | None = None) -> Iterator[dict]:
        """Contradictions between facts still in the report (older side neither deleted nor
        forgotten, newer side not deleted), streamed (a server-side cursor on Postgres)."""
        # Unary +: SQLite scans the contradictions and looks both facts up by id, rather than
        # probing the contradictions of every fact of the sources (slower even when none).
        where, params = scope("+o.source_id", source_ids)
        sql = ("SELECT o.ref AS older, n.ref AS newer, c.kind, c.confidence, c.evidence, c.update_json, "
               f"o.source_id, n.source_id {REPORTED_CONTRADICTIONS} {where} ORDER BY o.ref, n.ref")
        names = {i: n for i, n in plain_rows(self.conn, self.dialect, "SELECT id, name FROM sources", ())}
        rows = self.conn.stream(sql, params) if self.dialect == "postgres" else plain_rows(
            self.conn, self.dialect, sql, params)
        for older, newer, kind, confidence, evidence, update_json, o_src, n_src in rows:
            item = {"older": older, "newer": newer, "kind": kind, "confidence": round(confidence, 3),
                    "evidence": evidence}
            if update_json:
                item["update"] = jsontext.loads(update_json)
            if o_src != n_src:          # sources sharing a subject_space: say which two met
                item["sources"] = [names.get(o_src), names.get(n_src)]
            yield item

    def count_contradictions(self, source_ids: list[int] | None = None) -> int:
        """How many contradictions iter_contradictions() yields, counted in the database."""
        where, params = scope("+o.source_id", source_ids)
        return self.conn.execute(f"SELECT count(*) {REPORTED_CONTRADICTIONS} {where}", params).fetchone()[0]

    def contradiction_evidence(self, older_ref: str) -> list[dict]:
        """{newer, evidence} of the reported contradictions of one (older) fact, newer ref
        order: what iter_contradictions() yields for it, read through the ref index."""
        return [{"newer": newer, "evidence": evidence} for newer, evidence in plain_rows(
            self.conn, self.dialect,
            f"SELECT n.ref, c.evidence {REPORTED_CONTRADICTIONS} AND o.ref = ? ORDER BY n.ref", (older_ref,))]
