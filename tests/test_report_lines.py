"""The JSON report writes each fact as text built without a dict (overlay/engine/audit.py
fact_lines): every line must be exactly the encoder's text of the fact's dict (fact_dicts),
for every kind of value a report row can hold: non-ASCII and control characters, quotes
and backslashes, keys stored by every writer (one or several parts, non-string values,
escaped text), floats of every magnitude and the non-finite ones, ints where floats are
usual, NULLs, contradicted_by lists and annotations; and the ISO times SQLite writes for
whole seconds must be to_iso()'s, over the years 1-9999, on a real overlay file."""
from __future__ import annotations

import json
import random

import pytest

from memwatch_overlay.core import fastjson as jsontext
from memwatch_overlay.overlay.engine.audit import fact_dicts, fact_lines
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.overlay.store.reports import ReportRow

TEXTS = ["Works at Acme", "", "é ✓ 😀 日本", 'say "hi"', "back\\slash", "tab\there", "new\nline",
         "\x00\x01\x1f\x7f", "\u2028\u2029", "%s %d %%", "{}", "null"]
PKS = ['{"id": "42"}', '{"id": "a b-c_d/e:f"}', '{"id": "é"}', '{"id": "\\u00e9"}', '{"id": "q\\"x"}',
       '{"id": 7}', '{"id": 1.5}', '{"id": null}', '{"user": "u1", "key": "k"}', '{"id":"42"}',
       '{"path": "a[\\"3\\"].b"}', '{"id": "tab\\there"}', '{"": ""}', '{"id": "~!#$%&()*+,-./[]^_`{|}"}']
FLOATS = [None, 0.0, -0.0, 1.0, 0.5, 0.123456, 812.345678, 1e-05, 5e-07, 1e16, 123456789.123,
          float("inf"), float("-inf"), 3, 0, 10**20, True]
ANNOTATIONS = [None, "", "[]", '[{"action_id":1,"action":0,"when":"stale","label":"stale","values":{"n":"é ✓"},'
               '"at":"2026-11-29T00:00:00.000Z"}]']


def random_row(rnd: random.Random) -> tuple:
    times = [None, 1_796_000_000.0, 1_796_000_000.123456, 0.0, 1.5e9]
    return ReportRow(
        source=rnd.choice(["bot", "mem0", "é-source"]), table=rnd.choice(["agent_facts", "t\"q"]),
        pk=rnd.choice(PKS), ref=rnd.choice(["bot:agent_facts:42", "bot:t:é"]),
        subject=rnd.choice([None, "u1", "ü"]), key=rnd.choice([None, "employer", "k\\x"]),
        text=rnd.choice(TEXTS), category=rnd.choice(["general", "employment"]),
        created_at=rnd.choice(times), updated_at=rnd.choice(times), age_days=rnd.choice(FLOATS),
        freshness=rnd.choice(FLOATS), label=rnd.choice(["fresh", "expired", None]),
        days_left=rnd.choice(FLOATS), days_until_expired=rnd.choice(FLOATS), expires_at=rnd.choice(times),
        expired_by=rnd.choice([None, "ttl", "source"]), confidence=rnd.choice(FLOATS),
        status=rnd.choice(["active", "contradicted", "deleted"]),
        contradicted_by=rnd.choice([None, "", "bot:t:1", "bot:t:1\x1fbot:t:é\x1fq\"r"]),
        first_seen=rnd.choice(times), annotations=rnd.choice(ANNOTATIONS))


NO_ISO = (None, None, None)   # the line rows' ISO texts the database did not write


def test_fact_lines_are_the_encoders_text_of_fact_dicts():
    rnd = random.Random(5)
    rows = [random_row(rnd) for _ in range(5000)]
    encode = jsontext.encoder()
    want = [encode(d) for d in fact_dicts(rows)]
    got = list(fact_lines(row + NO_ISO for row in rows))
    assert got == want
    # and the encoder is json.dumps itself (ensure_ascii off), so the lines parse back
    assert [json.loads(line) for line in got[:200]] == [json.loads(json.dumps(d, ensure_ascii=False))
                                                         for d in fact_dicts(rows[:200])]


def test_every_stored_pk_form_is_written_as_its_parsed_value():
    encode = jsontext.encoder()
    for pk in PKS:
        row = random_row(random.Random(1))._replace(pk=pk)
        (line,) = fact_lines([row + NO_ISO])
        assert json.loads(line)["pk"] == json.loads(pk)
        assert line == encode(next(fact_dicts([row])))


@pytest.mark.parametrize("dialect", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_the_iso_times_the_database_writes_are_to_isos(tmp_path, request, dialect):
    """Whole-second epochs from year 1 to 9999 (and fractions, NULLs, the far ends) stored in a
    real overlay (a SQLite file, a Postgres database): the report's lines from
    iter_report_line_rows equal the encoder's text of fact_dicts over iter_report_rows, and the
    database wrote most of the times itself."""
    rnd = random.Random(9)
    lowest, highest = -62135596800, 253402300799          # 0001-01-01, 9999-12-31T23:59:59
    times = [lowest, highest, 0, -1, 1, 951782400, 1796000000, 1796000000.5, 1796000000.000001,
             -0.5, 1e-7, highest + 0.4] + [float(rnd.randrange(lowest, highest)) for _ in range(3000)]
    store = OverlayStore(tmp_path / "o.db" if dialect == "sqlite" else request.getfixturevalue("pg_database")("mw_iso"))
    store.conn.execute("INSERT INTO sources (id, name, connector, target) VALUES (1, 'bot', 'sqlite', 'x')")
    store.conn.executemany(
        "INSERT INTO facts (source_id, tbl, pk, ref, text, category, created_at, updated_at, expires_at, "
        "content_hash, first_seen, last_seen, seen_sync, changed_sync) "
        "VALUES (1, 't', ?, ?, 'x', 'general', ?, ?, ?, '', ?, ?, 1, 1)",
        [(json.dumps({"id": str(i)}), f"bot:t:{i}", t, rnd.choice([None, t, times[i // 2]]),
          rnd.choice([None, t]), 1796000000.25, 1796000000.25) for i, t in enumerate(times)])
    encode = jsontext.encoder()
    line_rows = list(store.iter_report_line_rows())
    assert list(fact_lines(line_rows)) == [encode(d) for d in fact_dicts(store.iter_report_rows())]
    written = [iso for row in line_rows for iso in row[-3:] if iso is not None]
    assert len(written) > 3000 and all(iso.endswith('+00:00"') for iso in written)
    store.close()
