"""Reports read contradictions from the overlay as they need them, never all at once.

A million-fact overlay can hold a million contradictions; markdown and html list the
first few and count the rest, SARIF looks up the contradictions of the facts it writes.
Counted here by the contradictions each format pulls from the overlay's stream, with
output identical to rendering a fully materialised list.
"""
from __future__ import annotations

import io
import sqlite3

from memwatch_overlay.overlay.engine.audit import audit
from memwatch_overlay.overlay.output.formats import render_many
from memwatch_overlay.overlay.output.publish import Contradictions, contract
from memwatch_overlay.core.timeparse import parse_timestamp
from memwatch_overlay.rules.config import load_config
from storegen import write_config

USERS = 60
OPTIONS = {"markdown": {"top": 5}, "html": {"max_contradictions": 5}, "sarif": {}, "junit": {}}


def _audited(tmp_path):
    db = tmp_path / "bot.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, user_id TEXT, kind TEXT, fact_key TEXT, "
                 "content TEXT, created_at TEXT)")
    rows = []
    for i in range(USERS):
        rows.append((f"u{i}", "employment", "employer", f"Works at Acme {i}", "2025-01-01 10:00:00"))
        rows.append((f"u{i}", "employment", "employer", f"Just joined Initech {i}", "2026-11-01 10:00:00"))
    conn.executemany("INSERT INTO memories (user_id, kind, fact_key, content, created_at) VALUES (?, ?, ?, ?, ?)", rows)
    conn.commit()
    conn.close()
    return audit(config=load_config(write_config(tmp_path, db)), as_of=parse_timestamp("2026-11-29"))


def _render(report) -> dict[str, str]:
    streams = {fmt: io.StringIO() for fmt in OPTIONS}
    render_many(report, [(fmt, streams[fmt], OPTIONS[fmt]) for fmt in OPTIONS])
    return {fmt: s.getvalue() for fmt, s in streams.items()}


def test_reports_pull_only_the_contradictions_they_show(tmp_path):
    result = _audited(tmp_path)
    try:
        everything = list(result.contradictions())
        assert len(everything) == result.count_contradictions() == USERS
        pulled = []
        stream = result.contradictions

        def counting():
            for item in stream():
                pulled.append(item)
                yield item
        result.contradictions = counting
        report = contract(result)
        assert isinstance(report["contradictions"], Contradictions)
        lazy = _render(report)
        # markdown's 5 and html's 5, nothing for SARIF (looked up per fact) or junit
        assert len(pulled) == 10

        result.contradictions = lambda: iter(everything)
        report = contract(result)
        texts = report["contradictions"].text_of            # the page shows each side's text

        class Materialised(list):
            text_of = staticmethod(texts)
        report["contradictions"] = Materialised(everything)   # the materialised list, as before
        assert _render(report) == lazy
        assert "### Contradictions (60)" in lazy["markdown"] and "... and 55 more." in lazy["markdown"]
        assert lazy["html"].count("<tr data-older=") == 5 and "... and 55 more." in lazy["html"]
        assert lazy["sarif"].count("contradicted by ") == USERS
    finally:
        result.close()


def test_evidence_of_one_fact_is_what_the_stream_says_of_it(tmp_path):
    result = _audited(tmp_path)
    try:
        by_older: dict[str, list] = {}
        for c in result.contradictions():
            by_older.setdefault(c["older"], []).append({"newer": c["newer"], "evidence": c["evidence"]})
        assert len(by_older) == USERS
        live = Contradictions(result)
        for ref, items in by_older.items():
            assert live.evidence_of(ref) == items
        assert live.evidence_of("bot:memories:no-such-fact") == []
    finally:
        result.close()
