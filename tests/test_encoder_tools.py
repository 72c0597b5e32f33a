"""The pair-encoder tools' own logic, without a model: tools/encoder_layers.py's reading of a
detector record and tools/train_pair_encoder.py's restyling of training texts (--augment)."""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import encoder_layers as el  # noqa: E402
import train_pair_encoder as tpe  # noqa: E402


def _row(contradicted: bool, layer: str | None = None, closed: str | None = None, p: float = 0.0,
         category: str | None = "fact") -> dict:
    return {"case": "c", "memory": 0, "contradicted": contradicted, "layer": layer, "closed": closed, "p": p,
            "category": category}


def test_evidence_names_its_layer():
    assert el.layer_of('pair encoder 0.93: "joined Stripe"') == "encoder"
    assert el.layer_of('learned pair model 0.71 (slot "employer"): "x"') == "learned"
    assert el.layer_of('"left" in a clause similar to it (cosine 0.74): "x"') == "semcue"
    assert el.layer_of('employer "Google" ended: "I left Google"') == "rules"


def test_other_probabilities_change_only_what_the_encoder_may_read():
    rows = [
        _row(True, "rules"),                          # the rules' flag stands whatever the encoder says
        _row(False, "learned"),                       # so does the pair model's (a false one here)
        _row(True, None, None, 0.5),                  # open: flagged at p >= threshold
        _row(False, "encoder", None, 0.9),            # the shipped encoder's false flag: open, re-decided
        _row(True, None, "elsewhere", 0.99),          # kept from the encoder: never flagged by it
        _row(False, None, "entity", 0.99),
    ]
    shipped = [r["p"] for r in rows]
    assert el.simulate(rows, shipped, 0.72) == {"P": 0.333, "R": 0.333, "tp": 1, "fp": 2, "fn": 2}
    other = [0.0, 0.0, 0.8, 0.1, 0.0, 0.0]
    assert el.simulate(rows, other, 0.72) == {"P": 0.667, "R": 0.667, "tp": 2, "fp": 1, "fn": 1}
    assert el.simulate(rows, other, 0.85) == {"P": 0.5, "R": 0.333, "tp": 1, "fp": 1, "fn": 2}


def test_a_veto_drops_only_rules_and_pair_model_flags_the_encoder_reads_low():
    rows = [
        _row(False, "rules", None, 0.02),             # read far below the veto: dropped
        _row(True, "rules", None, 0.4),               # read above it: stands
        _row(True, "learned", None, 0.01),            # the pair model's flag read low: dropped (a miss now)
        _row(False, "semcue", None, 0.0),             # the semantic cue layer's: never vetoed
        _row(True, None, None, 0.9),                  # open: the threshold decides, as before
    ]
    probs = [r["p"] for r in rows]
    assert el.simulate(rows, probs, 0.72) == {"P": 0.6, "R": 1.0, "tp": 3, "fp": 2, "fn": 0}
    assert el.simulate(rows, probs, 0.72, veto=0.05) == {"P": 0.667, "R": 0.667, "tp": 2, "fp": 1, "fn": 1}
    assert el.simulate(rows, probs, 0.72, veto=0.5) == {"P": 0.5, "R": 0.333, "tp": 1, "fp": 1, "fn": 2}


def test_misses_are_counted_by_where_they_went():
    rows = [_row(True, None, "elsewhere", 0.9), _row(True, None, None, 0.05), _row(True, None, None, 0.61),
            _row(True, None, None, 0.64), _row(True, "encoder", None, 0.95), _row(False, None, None, 0.3)]
    assert el.fates(rows) == {"encoder 0.0-": 1, "encoder 0.6-": 2, "kept from it: elsewhere": 1}


def test_figures_per_category_split_the_same_rows():
    rows = [_row(True, None, None, 0.9, "employment"), _row(True, None, None, 0.1, "employment"),
            _row(False, None, None, 0.8, "location"), _row(True, "rules", None, 0.0, "location"),
            _row(True, None, None, 0.9, None)]
    probs = [r["p"] for r in rows]
    per = el.by_category(rows, probs, 0.72)
    assert per["employment"] == {"P": 1.0, "R": 0.5, "tp": 1, "fp": 0, "fn": 1}
    assert per["location"] == {"P": 0.5, "R": 1.0, "tp": 1, "fp": 1, "fn": 0}
    assert per["-"]["tp"] == 1                                  # a memory without a category
    assert sum(f["tp"] for f in per.values()) == el.simulate(rows, probs, 0.72)["tp"]


def test_a_stored_record_is_scored_without_the_detector(tmp_path, capsys):
    rows = [_row(True, None, None, 0.9, "employment"), _row(False, "rules", None, 0.0, "location")]
    rec = tmp_path / "rec.jsonl"
    rec.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert el.main(["unused.jsonl", "--from-record", str(rec), "--at", "0.72", "--by-category"]) == 0
    out = capsys.readouterr().out
    assert "shipped at 0.72: {'P': 0.5, 'R': 1.0, 'tp': 1, 'fp': 1, 'fn': 0}" in out
    assert "    employment: {'P': 1.0, 'R': 1.0, 'tp': 1, 'fp': 0, 'fn': 0}" in out


def test_a_record_of_other_cases_is_refused_before_any_weights_are_read(tmp_path, capsys):
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "x-1", "memories": [{"text": "a"}, {"text": "b"}], "new_text": "c"}) + "\n",
                     encoding="utf-8")
    rec = tmp_path / "rec.jsonl"
    rec.write_text(json.dumps(dict(_row(True), case="x-1")) + "\n", encoding="utf-8")      # one pair of two
    assert el.main([str(cases), "--from-record", str(rec), "--weights", "missing.safetensors"]) == 2
    assert "was not recorded from" in capsys.readouterr().err
    assert el.main([str(cases), "--from-record", str(tmp_path / "none.jsonl")]) == 2
    assert "--from-record" in capsys.readouterr().err


def test_missing_weights_and_a_lone_average_are_one_line_errors(tmp_path, capsys):
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "x-1", "memories": [{"text": "Works at Google"}], "new_text": "hi"}) + "\n",
                     encoding="utf-8")
    rec = tmp_path / "rec.jsonl"
    rec.write_text(json.dumps(dict(_row(True), case="x-1")) + "\n", encoding="utf-8")
    missing = str(tmp_path / "missing.safetensors")
    assert el.main([str(cases), "--from-record", str(rec), "--weights", missing]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "pair encoder weights not found" in err and err.count("\n") == 1
    with pytest.raises(SystemExit) as exit_:
        el.main([str(cases), "--from-record", str(rec), "--weights", missing, "--average"])
    assert exit_.value.code == 2
    assert "--average needs two or more --weights files" in capsys.readouterr().err


def test_fits_averaged_pair_by_pair_and_scored_as_one(tmp_path, capsys, monkeypatch):
    assert el.averaged([[0.9, 0.25], [0.5, 0.75]]) == [0.7, 0.5]
    rows = [_row(True, None, None, 0.5), _row(False, None, None, 0.5)]
    rec = tmp_path / "rec.jsonl"
    rec.write_text("".join(json.dumps(dict(r, memory=i)) + "\n" for i, r in enumerate(rows)), encoding="utf-8")
    fits = {"a.safetensors": [0.9, 0.9], "b.safetensors": [0.7, 0.3]}
    monkeypatch.setattr(el, "case_pairs", lambda path: ([("c", 0), ("c", 1)], [("old", "new"), ("old", "other")]))
    monkeypatch.setattr(el, "probabilities", lambda pairs, weights: fits[weights])
    assert el.main(["cases.jsonl", "--from-record", str(rec), "--weights", *fits, "--average", "--at", "0.72"]) == 0
    out = capsys.readouterr().out
    assert "a.safetensors at 0.72: {'P': 0.5, 'R': 1.0, 'tp': 1, 'fp': 1, 'fn': 0}" in out
    # the mean (0.8, 0.6) flags the contradicted pair only
    assert "average of 2 at 0.72: {'P': 1.0, 'R': 1.0, 'tp': 1, 'fp': 0, 'fn': 0}" in out


class _Scripted:
    """A random.Random stand-in answering from a script (which restyling, which word, where)."""

    def __init__(self, *answers):
        self.answers = list(answers)

    def randrange(self, *args):
        return self.answers.pop(0)

    def random(self):
        return self.answers.pop(0)

    def choice(self, seq):
        return seq[self.answers.pop(0)]


def test_each_restyling_keeps_the_meaning_and_changes_the_surface():
    text = "I'm going to start at Stripe because the commute is better."
    assert tpe.restyle(text, _Scripted(0)) == "im going to start at stripe because the commute is better"
    assert tpe.restyle("My e-mail is bo@x.com, thanks!", _Scripted(1)) == "My e mail is bo@x com thanks"
    assert tpe.restyle(text, _Scripted(2)) == "im gonna start at stripe bc the commute is better."
    # a typo in one longer word: two letters swapped, or one dropped
    assert tpe.restyle(text, _Scripted(3, 2, 1, 0.2)) == "I'm going to start at Stripe because the cmomute is better."
    assert tpe.restyle(text, _Scripted(3, 0, 1, 0.9)) == "I'm going to start at Sripe because the commute is better."
    assert tpe.restyle("ok fine", _Scripted(3)) == "ok fine"          # no word long enough: as it was


def test_augmenting_keeps_the_older_inputs_key():
    text = "I'm going to start at Stripe because the commute is better."
    old, new = tpe._augmented(("employer: Works at Infosys.", text), 1.0, random.Random(5))
    assert old.startswith("employer: ") and new != text
    assert tpe._augmented(("employer: Infosys", text), 0.0, random.Random(5)) == ("employer: Infosys", text)
