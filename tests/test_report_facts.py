"""The audit report's facts and contradictions are exactly what the overlay holds.

The report reads facts through one query with guarded per-fact subqueries and builds
the JSON with shortcuts (overlay/store/database.py REPORT_COLUMNS, overlay/engine/audit.py fact_dicts,
memwatch_overlay/core/fastjson.py). Here the expected report is computed independently, from plain
SELECTs of the facts, contradictions and actions tables, for an overlay holding
contradictions (some of whose newer sides were deleted), annotations (several on one
fact, undone ones, ones made on content that has since changed) and a forgotten fact:
a shortcut that drops or invents a contradicted_by ref or an annotation fails.
"""
from __future__ import annotations

import datetime as dt
import io
import json
import math
import random
import sqlite3
from collections import defaultdict

import pytest

from memwatch_overlay.core import fastjson as jsontext
from memwatch_overlay.overlay.engine.audit import (
    _IsoTexts,
    audit,
    fact_dict,
    open_overlay,
    overlay_report,
)
from memwatch_overlay.overlay.engine.maintenance import forget
from memwatch_overlay.overlay.output.tables import write_json
from memwatch_overlay.core.timeparse import parse_as_of, to_iso
from memwatch_overlay.overlay.writeback.apply import apply_plan
from memwatch_overlay.overlay.writeback.plan import plan_actions
from memwatch_overlay.overlay.writeback.undo import undo_actions
from memwatch_overlay.rules.config import load_config

FIRST = parse_as_of("2026-11-29T12:00:00")
LATER = parse_as_of("2026-12-01T08:30:00")
FIELDS = ["source", "table", "pk", "ref", "subject", "key", "text", "category", "created_at", "updated_at",
          "age_days", "freshness", "label", "days_left", "days_until_expired", "expires_at", "expired_by",
          "confidence", "status", "contradicted_by", "first_seen", "annotations"]
CONFIG = """
[overlay]
{overlay}

[[sources]]
name = "bot"
connector = "sqlite"
path = "agent.db"
table = "agent_facts"
id = "id"
text = "fact_value"
key = "fact_key"
subject = "user_id"
created_at = "created_at"
updated_at = "updated_at"

[[sources]]
name = "notes"
connector = "sqlite"
path = "agent.db"
table = "notes"
id = ["a", "b"]
text = "note"
subject = "a"
created_at = "made"

[[actions]]
when = "stale"
do = "annotate"
set = {{ note = "stale at {{as_of}} ✓", score = "{{freshness}}" }}

[[actions]]
when = "contradicted"
do = "annotate"

[[actions]]
when = "expired"
category = "employment"
do = "annotate"
set = {{ why = "old \\"job\\"" }}
"""


def make_store(path) -> None:
    """Users who changed jobs and cities over the years (contradictions), some facts with
    an updated_at, and a second table with a two-column key and non-ASCII text."""
    rnd = random.Random(11)
    base = dt.datetime(2026, 11, 29)
    values = {"employer": "Works at {}", "city": "Lives in {}", "food": "Loves {}"}
    names = ["Acme", "Globex", "Café “Zürich”", 'Quote "Co"', "Initech", "Tab\tCorp", "Umbrella 😀"]
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE agent_facts (id INTEGER PRIMARY KEY, user_id TEXT, fact_key TEXT, "
                 "fact_value TEXT, created_at TEXT, updated_at TEXT)")
    conn.execute("CREATE TABLE notes (a TEXT, b INTEGER, note TEXT, made TEXT, PRIMARY KEY (a, b))")
    rows = []
    for i in range(240):
        key = list(values)[i % 3]
        created = base - dt.timedelta(days=rnd.random() * 1500, microseconds=rnd.randrange(10**6))
        updated = None if i % 4 else (created + dt.timedelta(days=rnd.random() * 20)).isoformat(sep=" ")
        rows.append((f"u{i % 12}" if i % 19 else None, key, values[key].format(rnd.choice(names) + f" {i}"),
                     created.strftime("%Y-%m-%d %H:%M:%S.%f" if i % 2 else "%Y-%m-%d %H:%M:%S"), updated))
    conn.executemany("INSERT INTO agent_facts (user_id, fact_key, fact_value, created_at, updated_at) "
                     "VALUES (?, ?, ?, ?, ?)", rows)
    conn.executemany("INSERT INTO notes VALUES (?, ?, ?, ?)",
                     [(f"k{i % 5}", i, f"Works at Firm {i} ✓", (base - dt.timedelta(days=i * 41)).isoformat())
                      for i in range(40)])
    conn.commit()
    conn.close()


@pytest.fixture(params=["sqlite", "postgres"])
def audited(request, tmp_path):
    """A config whose overlay went through audit, annotate, undo, store edits and a re-audit."""
    if request.param == "sqlite":
        overlay = 'path = "overlay.db"'
    else:
        overlay = f'dsn = "{request.getfixturevalue("pg_database")("memwatch_report")}"'
    make_store(tmp_path / "agent.db")
    (tmp_path / "memwatch.toml").write_text(CONFIG.format(overlay=overlay), encoding="utf-8")
    cfg = load_config(tmp_path / "memwatch.toml")
    audit(config=cfg, as_of=FIRST).close()
    applied = apply_plan(plan_actions(cfg, FIRST)).annotated
    undo_actions(cfg, ids=[i for i, _ in applied][::7][:4])
    conn = sqlite3.connect(tmp_path / "agent.db")
    # edited rows: their annotations were made on content they no longer have
    conn.execute("UPDATE agent_facts SET fact_value = fact_value || ' (edited)' WHERE id % 29 = 0")
    # deleted rows, among them the newest fact of some users: the newer side of contradictions
    conn.execute("DELETE FROM agent_facts WHERE id % 31 = 0 OR id IN "
                 "(SELECT max(id) FROM agent_facts WHERE user_id IN ('u3', 'u7') GROUP BY user_id, fact_key)")
    conn.commit()
    conn.close()
    audit(config=cfg, as_of=LATER).close()
    apply_plan(plan_actions(cfg, LATER))
    assert forget(cfg, None, ["bot:agent_facts:5"], None, None) == 1
    return request.param, cfg


def expected_report(conn, sources: set[str] | None = None) -> tuple[list[dict], list[dict]]:
    """facts[] and contradictions[] computed from plain SELECTs, without the report's code."""
    names = {r["id"]: r["name"] for r in conn.execute("SELECT id, name FROM sources")}
    facts = {r["id"]: r for r in conn.execute("SELECT * FROM facts")}
    newer_refs = defaultdict(list)
    contradictions = []
    for c in conn.execute("SELECT * FROM contradictions ORDER BY older_id, newer_id"):
        older, newer = facts[c["older_id"]], facts[c["newer_id"]]
        if newer["status"] == "deleted":
            continue
        newer_refs[older["id"]].append(newer["ref"])
        if older["status"] not in ("deleted", "forgotten") and (sources is None or names[older["source_id"]] in sources):
            item = {"older": older["ref"], "newer": newer["ref"], "kind": c["kind"],
                    "confidence": round(c["confidence"], 3), "evidence": c["evidence"]}
            if c["update_json"]:
                item["update"] = json.loads(c["update_json"])
            contradictions.append(item)
    annotations = defaultdict(list)
    for a in conn.execute("SELECT * FROM actions ORDER BY id"):
        if a["kind"] == "annotate" and a["state"] == "applied" and a["undone_at"] is None:
            ms = math.floor(a["run_at"] * 1000.0 + 210866760000000.0 + 0.5) - 210866760000000
            at = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms)
            annotations[(a["ref"], a["fact_hash"])].append({
                "action_id": a["id"], "action": a["action_index"], "when": json.loads(a["spec"]).get("when"),
                "label": a["label"], "values": None if a["values_json"] is None else json.loads(a["values_json"]),
                "at": at.strftime("%Y-%m-%dT%H:%M:%S") + f".{ms % 1000:03d}Z"})

    def iso(epoch):
        return None if epoch is None else dt.datetime.fromtimestamp(epoch, dt.timezone.utc).isoformat()

    out = []
    for fid in sorted(facts):
        f = facts[fid]
        if f["status"] == "forgotten" or (sources is not None and names[f["source_id"]] not in sources):
            continue
        out.append({
            "source": names[f["source_id"]], "table": f["tbl"], "pk": json.loads(f["pk"]), "ref": f["ref"],
            "subject": f["subject"], "key": f["key"], "text": f["text"], "category": f["category"],
            "created_at": iso(f["created_at"]), "updated_at": iso(f["updated_at"]), "age_days": f["age_days"],
            "freshness": f["freshness"], "label": f["label"], "days_left": f["days_left"],
            "days_until_expired": f["days_until_expired"], "expires_at": iso(f["expires_at"]),
            "expired_by": f["expired_by"], "confidence": f["confidence"], "status": f["status"],
            "contradicted_by": newer_refs[fid], "first_seen": iso(f["first_seen"]),
            "annotations": annotations[(f["ref"], f["content_hash"])]})
    return out, sorted(contradictions, key=lambda c: (c["older"], c["newer"]))


def _unordered(facts: list[dict]) -> list[dict]:
    """Postgres aggregates without ORDER BY (as the overlay's SQL does): order-free compare."""
    return [{**f, "contradicted_by": sorted(f["contradicted_by"]),
             "annotations": sorted(f["annotations"], key=lambda a: a["action_id"])} for f in facts]


def _json_report(result) -> dict:
    out = io.StringIO()
    write_json(result, out)
    return json.loads(out.getvalue())


def test_json_report_holds_exactly_the_overlays_facts_contradictions_and_annotations(audited):
    dialect, cfg = audited
    result = overlay_report(cfg, as_of=LATER)
    try:
        report = _json_report(result)
        facts, contradictions = expected_report(result.store.conn)
        # the overlay exercises every case the report's shortcuts must keep
        statuses = {f["status"] for f in facts}
        assert {"active", "contradicted", "deleted"} <= statuses
        assert result.store.conn.execute("SELECT count(*) FROM facts WHERE status = 'forgotten'").fetchone()[0] == 1
        assert sum(1 for f in facts if f["contradicted_by"]) >= 20
        assert any(len(f["contradicted_by"]) >= 2 for f in facts)
        assert sum(1 for f in facts if f["annotations"]) >= 20
        assert any(len(f["annotations"]) >= 2 for f in facts)
        # A deleted newer fact no longer outdates anything: the block walk (overlay/detect/
        # blocks.py) hands the older fact on to the next replacement, so no such edge is stored
        deleted_newer = result.store.conn.execute(
            "SELECT count(*) FROM contradictions c JOIN facts n ON n.id = c.newer_id "
            "WHERE n.status = 'deleted'").fetchone()[0]
        assert deleted_newer == 0
        undone, stale_content = result.store.conn.execute(
            "SELECT sum(CASE WHEN a.undone_at IS NOT NULL THEN 1 ELSE 0 END), "
            "sum(CASE WHEN a.fact_hash != f.content_hash THEN 1 ELSE 0 END) "
            "FROM actions a JOIN facts f ON f.ref = a.ref WHERE a.kind = 'annotate'").fetchone()
        assert undone and stale_content

        assert [list(f) for f in report["facts"]] == [FIELDS] * len(facts)
        if dialect == "postgres":
            assert _unordered(report["facts"]) == _unordered(facts)
        else:
            assert report["facts"] == facts
        assert report["contradictions"] == contradictions
        assert report["summary"]["total"] == sum(1 for f in facts if f["status"] != "deleted")
        # the by-name path (MCP, search) builds the same dicts
        for fact in report["facts"]:
            assert fact_dict(result.store.fact_row(fact["ref"])) == fact
    finally:
        result.close()


def test_a_report_of_one_source_holds_only_its_facts_and_contradictions(audited):
    dialect, cfg = audited
    result = overlay_report(cfg, as_of=LATER, source_name="notes")
    try:
        report = _json_report(result)
        facts, contradictions = expected_report(result.store.conn, sources={"notes"})
        assert facts and contradictions
        if dialect == "postgres":
            assert _unordered(report["facts"]) == _unordered(facts)
        else:
            assert report["facts"] == facts
        assert report["contradictions"] == contradictions
    finally:
        result.close()


def test_the_report_after_every_contradiction_and_annotation_is_gone(tmp_path):
    """Guarded subqueries: empty tables give empty lists, not stale or missing keys."""
    make_store(tmp_path / "agent.db")
    (tmp_path / "memwatch.toml").write_text(CONFIG.format(overlay='path = "overlay.db"') +
                                            "\n[detector]\nenabled = false\n", encoding="utf-8")
    cfg = load_config(tmp_path / "memwatch.toml")
    audit(config=cfg, as_of=FIRST).close()
    with open_overlay(cfg, None) as store:
        assert store.conn.execute("SELECT count(*) FROM contradictions").fetchone()[0] == 0
    result = overlay_report(cfg, as_of=FIRST)
    try:
        report = _json_report(result)
        facts, _ = expected_report(result.store.conn)
        assert report["facts"] == facts and len(facts) == 280
        assert all(f["contradicted_by"] == [] and f["annotations"] == [] for f in report["facts"])
        assert report["contradictions"] == []
    finally:
        result.close()


# -- the JSON helpers -----------------------------------------------------------------
LOADS_CASES = ['{"id": "1"}', '{"a": "k0", "b": "7"}', '{"id": "caf\\u00e9 \\"x\\""}', ' {"id": "1"}',
               '{"id": "1"} ', '\n[1, 2.5, null, true]\t', '"text"', "12", "-0.0", "[]", "{}",
               '[{"action_id": 3, "values": {"note": "✓"}, "at": "2026-11-29T19:09:16.715Z"}]']
LOADS_ERRORS = ["", " ", '{"id": "1"}x', '{"id": "1"', "nope", '{"id": "1\x01"}', "[1,]"]


@pytest.mark.parametrize("text", LOADS_CASES)
def test_loads_is_json_loads(text):
    got, want = jsontext.loads(text), json.loads(text)
    assert got == want and type(got) is type(want)
    assert json.dumps(got) == json.dumps(want)


def test_loads_takes_bytes_and_refuses_none_like_json_loads():
    assert jsontext.loads(b'{"id": "1"}') == json.loads(b'{"id": "1"}') == {"id": "1"}
    with pytest.raises(TypeError):
        jsontext.loads(None)


@pytest.mark.parametrize("text", LOADS_ERRORS)
def test_loads_rejects_what_json_loads_rejects(text):
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    with pytest.raises(json.JSONDecodeError):
        jsontext.loads(text)


def _random_value(rnd: random.Random, depth: int = 0):
    kind = rnd.randrange(9 if depth < 3 else 7)
    if kind == 0:
        return "".join(rnd.choice('aé✓😀"\\\n\t\x00\x1f\u2028 /<>&') for _ in range(rnd.randrange(12)))
    if kind == 1:
        return rnd.choice([0.0, -0.0, 1e-05, 1e16, 1e300, 5e-324, float("inf"), float("-inf"),
                           rnd.random() * 10 ** rnd.randrange(-8, 20), round(rnd.random(), 6)])
    if kind == 2:
        return rnd.randrange(-10**20, 10**20)
    if kind in (3, 4):
        return rnd.choice([True, False, None])
    if kind in (5, 6):
        return "plain text"
    if kind == 7:
        return [_random_value(rnd, depth + 1) for _ in range(rnd.randrange(5))]
    return {str(_random_value(rnd, 3)): _random_value(rnd, depth + 1) for _ in range(rnd.randrange(5))}


@pytest.mark.parametrize("ensure_ascii", [False, True])
def test_encoder_gives_the_text_json_encoder_gives(ensure_ascii):
    encode, plain = jsontext.encoder(ensure_ascii), json.JSONEncoder(ensure_ascii=ensure_ascii).encode
    rnd = random.Random(5)
    for _ in range(3000):
        value = {"fact": _random_value(rnd), "list": [_random_value(rnd) for _ in range(3)],
                 "words": "Zoë moved to Kraków \u2603 ☃ 😀"}
        assert encode(value) == plain(value)
        if ensure_ascii:
            assert encode(value) == json.dumps(value)       # what contradictions.update_json held
    nan = {"x": float("nan")}
    assert encode(nan) == plain(nan) == '{"x": NaN}'
    with pytest.raises(TypeError):
        encode({"x": object()})


def test_iso_texts_match_to_iso_through_evictions():
    texts = _IsoTexts(size=3)
    rnd = random.Random(2)
    epochs = [None, 0, 1.5, -86400.25, 1764374400.123456, 1764374400.9999996, 253402300799.0]
    epochs += [rnd.choice(epochs[1:-1]) + rnd.random() * 1e6 for _ in range(20)]
    for epoch in epochs * 3:
        assert texts[epoch] == to_iso(epoch)
        assert len(texts) <= 5
