"""The pair encoder (overlay/detect/pair_encoder.py): the shipped fine-tuned MiniLM
cross-encoder, loaded offline, in the detector's embeddings mode, its verdicts kept in the
overlay, and the training script's weights read back as they were trained.

The pairs below were written for these tests (none is an eval case)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.embeddings

pytest.importorskip("sentence_transformers", reason="the [embeddings] extra is not installed")

from memwatch_overlay.overlay.detect.detector import Detector, FactView  # noqa: E402
from memwatch_overlay.overlay.detect.embeddings import Embedder  # noqa: E402
from memwatch_overlay.overlay.detect.pair_encoder import PairEncoder, older_input, weights_path  # noqa: E402
from memwatch_overlay.overlay.store.database import OverlayStore  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

# (older memory, its key, newer text): the newer text means the memory no longer holds, said
# without the words a rule of the slot pack is written for
CHANGES = [
    ("Works at Deloitte", "employer", "my first payslip from Accenture landed today, not bad"),
    ("Lives in Manchester", "city", "the new flat in Glasgow has the worst water pressure"),
    ("Is a vegetarian", None, "had the most amazing steak last night, I've missed it so much"),
    ("Drives a Honda Civic", None, "the new Tesla needs a software update every other day"),
    ("Has a boyfriend named Tom", None, "since Tom and I split I've been going to the gym a lot"),
    ("Smokes about ten cigarettes a day", None, "three months without a single cigarette today!"),
    ("Is studying law at Leeds University", None, "graduation photos are finally back, so weird to be done"),
    ("Has one cat, Mochi", "pets", "Mochi and the new kitten are finally getting along"),
]
# the same topics, but nothing changed for the user
LOOK_ALIKES = [
    ("Works at Deloitte", "employer", "my brother just got an offer from Accenture"),
    ("Lives in Manchester", "city", "in Glasgow for the weekend visiting my aunt"),
    ("Is a vegetarian", None, "found a great new lentil curry recipe"),
    ("Drives a Honda Civic", None, "thinking about maybe getting a Tesla one day"),
    ("Has a boyfriend named Tom", None, "Tom cooked dinner for us tonight, so sweet"),
    ("Smokes about ten cigarettes a day", None, "should I try to quit smoking next year?"),
    ("Is studying law at Leeds University", None, "exam season at Leeds is brutal, so much reading"),
    ("Has one cat, Mochi", "pets", "Mochi knocked my coffee over again"),
]


@pytest.fixture(scope="module")
def encoder():
    return PairEncoder()


def test_the_shipped_weights_load_offline_with_their_threshold(encoder):
    assert weights_path().is_file()
    assert 0.5 <= encoder.threshold < 1.0
    assert encoder.model_name.startswith("pair-encoder:all-MiniLM-L6-v2:")
    # the shipped file is an ensemble of two fits (stop 45), each trained on the corpus too
    members = encoder.meta.get("members", [encoder.meta])
    assert len(members) == encoder.meta.get("fits", 1) == 2
    assert all(m["rank"] > 0 and "tools/pair_corpus.jsonl" in m["trained_on"] for m in members)
    assert encoder.veto is not None and 0 < encoder.veto < encoder.threshold
    assert older_input("job_title", "Nurse") == "job title: Nurse"


def test_it_ranks_changes_above_their_look_alikes(encoder):
    """A floor, not a per-pair rule: each implicit change scores above the look-alike of its
    own topic, the look-alikes stay under the threshold, and most of the changes reach it (the
    stop-38 fit, fourteen authors more than stop 37's: docs/contradictions.md)."""
    changes = encoder.probabilities([(older_input(k, o), n) for o, k, n in CHANGES])
    alikes = encoder.probabilities([(older_input(k, o), n) for o, k, n in LOOK_ALIKES])
    assert sum(c > a for c, a in zip(changes, alikes)) >= 7, (changes, alikes)
    assert sum(p >= encoder.threshold for p in alikes) <= 1, alikes
    assert sum(changes) / len(changes) > 2 * sum(alikes) / len(alikes)
    assert sum(p >= encoder.threshold for p in changes) >= 4, changes


def test_the_detector_flags_what_the_rules_leave_open(encoder):
    """The encoder's finding in the detector, at its shipped threshold: a pair the rules and
    the pair model leave open, read by the encoder, flagged at the threshold; a pair the rules
    decide, never read."""
    enc = PairEncoder()
    old = FactView("s:t:1", "u1", "pets", "Has one cat, Mochi", "fact", 0.0)
    new = FactView("s:t:2", "u1", None, "Mochi and the new kitten are finally getting along", "fact", 86400.0 * 30)
    assert Detector().compare(new, [old]) == []          # the rules and the pair model read nothing here
    det = Detector(embedder=Embedder(), pair_encoder=enc)
    found = det.compare(new, [old])
    assert [c.older for c in found] == ["s:t:1"]
    assert found[0].kind == "semantic" and found[0].evidence.startswith("pair encoder")
    assert enc.threshold <= found[0].confidence <= 0.85
    assert enc.scored == 1
    # a look-alike is read too, and flagged exactly when it reaches the threshold (whether it
    # does is the model's judgement, held in bulk by the ranking test above: the stop-39 fit
    # gives this one 0.84, stop 38's stayed under)
    other = FactView("s:t:3", "u1", None, "Mochi knocked my coffee over again", "fact", 86400.0 * 31)
    [p] = encoder.probabilities([(older_input("pets", old.text), other.text)])
    assert (det.compare(other, [old]) != []) == (p >= enc.threshold)
    assert enc.scored == 2
    # a pair the rules decide is read by the encoder only for its veto (the shipped file's):
    # once, and the rules' flag stands; without a veto it is never read
    moved = FactView("s:t:4", "u1", None, "We moved to Lisbon last month", "location", 86400.0 * 40)
    found = det.compare(moved, [FactView("s:t:5", "u1", None, "Lives in Leeds", "location", 0.0)])
    assert [c.kind for c in found] == ["value"]
    assert enc.scored == 3
    plain = PairEncoder(veto=0)
    found = Detector(embedder=det.embedder, pair_encoder=plain).compare(
        moved, [FactView("s:t:5", "u1", None, "Lives in Leeds", "location", 0.0)])
    assert [c.kind for c in found] == ["value"] and plain.scored == 0


def test_it_comes_with_embeddings_and_can_be_turned_off(tmp_path):
    from memwatch_overlay.overlay.detect.blocks import make_detector
    from memwatch_overlay.rules.config import load_config
    base = tmp_path / "base.toml"
    base.write_text('[[sources]]\nname = "bot"\nconnector = "sqlite"\npath = "x.db"\ntable = "m"\n'
                    '[embeddings]\nenabled = true\n')
    det = make_detector(load_config(base))
    assert isinstance(det.pair_encoder, PairEncoder)
    assert det.encoder_gate is False                  # it reads every pair the rules leave open
    gated = tmp_path / "gated.toml"
    gated.write_text(base.read_text() + "pair_encoder_gate = true\n")
    assert make_detector(load_config(gated)).encoder_gate is True
    assert make_detector(load_config(base)).pair_encoder.threshold == PairEncoder().threshold   # the file's
    moved = tmp_path / "moved.toml"
    moved.write_text(base.read_text() + "pair_encoder_threshold = 0.9\n")
    assert make_detector(load_config(moved)).pair_encoder.threshold == 0.9
    off = tmp_path / "off.toml"
    off.write_text(base.read_text() + "pair_encoder = false\n")
    assert make_detector(load_config(off)).pair_encoder is None
    rules_only = tmp_path / "rules.toml"
    rules_only.write_text(base.read_text().replace("enabled = true", "enabled = false"))
    assert make_detector(load_config(rules_only)).pair_encoder is None


def test_a_threshold_set_in_the_config_decides_which_pairs_are_flagged(encoder):
    """`[embeddings] pair_encoder_threshold` moves the detector along the encoder's curve:
    a pair is flagged exactly when its probability reaches the threshold given."""
    old, key, new = CHANGES[7]            # a pair the rules and the pair model leave open
    [p] = encoder.probabilities([(older_input(key, old), new)])
    older = FactView("s:t:1", "u1", key, old, "fact", 0.0)
    newer = FactView("s:t:2", "u1", None, new, "fact", 86400.0 * 30)
    embedder = Embedder()
    for threshold, flagged in ((p - 0.01, True), (min(p + 0.01, 1.0), False)):
        det = Detector(embedder=embedder, pair_encoder=PairEncoder(threshold=threshold))
        found = det.compare(newer, [older])
        assert [c.evidence.startswith("pair encoder") for c in found] == ([True] if flagged else []), threshold


def test_a_veto_drops_a_rules_flag_the_encoder_reads_below_it(tmp_path, encoder):
    """`veto`: a flag of the rules (or of the pair model) stands only when the encoder reads
    its pair at or above the veto; with no veto such a pair is never read."""
    from memwatch_overlay.core.errors import ConfigError
    from memwatch_overlay.overlay.detect.blocks import make_detector
    from memwatch_overlay.rules.config import load_config
    older = FactView("s:t:5", "u1", None, "Lives in Leeds", "location", 0.0)
    newer = FactView("s:t:4", "u1", None, "We moved to Lisbon last month", "location", 86400.0 * 40)
    embedder = Embedder()
    [p] = encoder.probabilities([Detector().encoder_input(newer, older)])
    for veto, kinds in ((max(p - 0.01, 0.001), ["value"]), (min(p + 0.01, 1.0), [])):
        enc = PairEncoder(veto=veto)
        found = Detector(embedder=embedder, pair_encoder=enc).compare(newer, [older])
        assert [c.kind for c in found] == kinds, (p, veto)
        assert enc.scored == 1                        # the flagged pair was read, once
    # two facts under one meaningful store key: the store says they hold one thing; never asked
    enc = PairEncoder(veto=1.0)
    keyed = Detector(embedder=embedder, pair_encoder=enc).compare(
        FactView("s:t:7", "u1", "employer", "Stripe", "employment", 86400.0 * 40),
        [FactView("s:t:6", "u1", "employer", "Google", "employment", 0.0)])
    assert [c.kind for c in keyed] == ["value"] and enc.scored == 0
    enc = PairEncoder(veto=0)                         # 0: no veto, whatever the weights file says
    assert enc.veto is None
    assert [c.kind for c in Detector(embedder=embedder, pair_encoder=enc).compare(newer, [older])] == ["value"]
    assert enc.scored == 0
    base = tmp_path / "base.toml"
    base.write_text('[[sources]]\nname = "bot"\nconnector = "sqlite"\npath = "x.db"\ntable = "m"\n'
                    '[embeddings]\nenabled = true\n')
    assert make_detector(load_config(base)).pair_encoder.veto == PairEncoder().veto   # the file's
    for value, veto in (("0.2", 0.2), ("0", None)):
        cfg = tmp_path / f"veto{value}.toml"
        cfg.write_text(base.read_text() + f"pair_encoder_veto = {value}\n")
        assert make_detector(load_config(cfg)).pair_encoder.veto == veto
    bad = tmp_path / "bad.toml"
    bad.write_text(base.read_text() + "pair_encoder_veto = 1.5\n")
    with pytest.raises(ConfigError, match="embeddings.pair_encoder_veto"):
        load_config(bad)


def test_a_weights_files_threshold_and_veto_are_set_without_touching_its_tensors(tmp_path, capsys):
    sys.path.insert(0, str(ROOT / "tools"))
    import encoder_meta
    from safetensors.torch import load_file
    out = tmp_path / "w.safetensors"
    assert encoder_meta.main([str(weights_path()), "--set", "threshold=0.8", "veto=0.2", "--out", str(out)]) == 0
    enc = PairEncoder(weights=out)
    assert (enc.threshold, enc.veto) == (0.8, 0.2)
    assert enc.model_name != PairEncoder().model_name          # cached verdicts of the old file are not reused
    shipped = PairEncoder().meta
    assert {k: v for k, v in enc.meta.items() if k not in ("threshold", "veto")} == \
        {k: v for k, v in shipped.items() if k not in ("threshold", "veto")}   # the rest of the metadata kept
    before, after = load_file(str(weights_path())), load_file(str(out))
    assert before.keys() == after.keys() and all(before[k].equal(after[k]) for k in before)
    assert encoder_meta.main([str(out), "--set", "veto=0"]) == 0
    assert PairEncoder(weights=out).veto is None and "veto" not in PairEncoder(weights=out).meta
    capsys.readouterr()
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"not a weights file")
    for args in ([str(out), "--set", "scale=2"], [str(out), "--set", "veto=1.5"], [str(junk)],
                 [str(tmp_path / "missing.safetensors")]):
        assert encoder_meta.main(args) == 2, args
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, err


def test_verdicts_are_kept_in_the_overlay_by_model(tmp_path, encoder):
    pairs = [(older_input(k, o), n) for o, k, n in CHANGES[:3]]
    with OverlayStore(tmp_path / "o.db") as store:
        first = PairEncoder()
        first.cache = store
        probs = first.probabilities(pairs)
        assert first.scored == 3
        assert store.verdict_count(first.model_name) == 3
        again = PairEncoder()                     # a new process's encoder: nothing in memory
        again.cache = store
        assert again.probabilities(pairs) == pytest.approx(probs, abs=1e-6)
        assert again.scored == 0                  # every answer came from the overlay
        assert store.verdict_count() == 3         # and the judge's verdicts are another model's


def test_trained_weights_read_back_as_trained(tmp_path):
    """tools/train_pair_encoder.py's saved adapters, added to the base weights by the
    detector's loader, give the probabilities the trained model gave (fp16 storage)."""
    sys.path.insert(0, str(ROOT / "tools"))
    import train_pair_encoder as tpe

    class Args:
        rank, lr, epochs, augment = 4, 1e-3, 1, 0.0

    examples = [{"pair": (older_input(k, o), n), "y": 1, "rule": False, "file": "t"} for o, k, n in CHANGES] + [
        {"pair": (older_input(k, o), n), "y": 0, "rule": False, "file": "t"} for o, k, n in LOOK_ALIKES]
    model, tok, adapters = tpe.fit(examples, Args, seed=3)
    trained = tpe.predict(model, tok, examples)
    path = tmp_path / "enc.safetensors"
    tpe.save(model, adapters, path, {"threshold": 0.7, "scale": 1.0, "rank": 4, "trained_on": ["t"]})
    loaded = PairEncoder(weights=path)
    assert loaded.threshold == 0.7
    assert loaded.model_name != PairEncoder().model_name
    got = loaded.probabilities([e["pair"] for e in examples])
    assert got == pytest.approx(trained, abs=0.02)


def test_an_ensemble_file_answers_the_mean_of_its_fits(tmp_path, encoder):
    """tools/train_pair_encoder.py --combine writes several fits as one weights file; the
    detector's encoder then answers the mean of the fits' probabilities, at the threshold the
    ensemble was written with, under a model name of its own."""
    sys.path.insert(0, str(ROOT / "tools"))
    import train_pair_encoder as tpe

    class Args:
        rank, lr, epochs, augment = 4, 1e-3, 1, 0.0

    examples = [{"pair": (older_input(k, o), n), "y": 1, "rule": False, "file": "t"} for o, k, n in CHANGES] + [
        {"pair": (older_input(k, o), n), "y": 0, "rule": False, "file": "t"} for o, k, n in LOOK_ALIKES]
    fits = []
    for seed, rank in ((5, 4), (6, 2)):
        Args.rank = rank
        model, _, adapters = tpe.fit(examples, Args, seed=seed)
        path = tmp_path / f"small{seed}.safetensors"
        tpe.save(model, adapters, path, {"threshold": 0.5, "scale": 1.0, "rank": rank, "trained_on": ["t"]})
        fits.append(path)
    small, other = fits
    both = tmp_path / "both.safetensors"
    assert tpe.main(["--combine", str(other), str(small), "--threshold", "0.61", "--out", str(both)]) == 0
    ensemble = PairEncoder(weights=both)
    assert ensemble.threshold == 0.61 and ensemble.meta["fits"] == 2
    assert ensemble.meta["members"][0]["rank"] == 2 and ensemble.meta["members"][1]["rank"] == 4
    assert ensemble.model_name not in (PairEncoder(weights=other).model_name, PairEncoder(weights=small).model_name)
    pairs = [e["pair"] for e in examples]
    first, own = PairEncoder(weights=other).probabilities(pairs), PairEncoder(weights=small).probabilities(pairs)
    assert ensemble.probabilities(pairs) == pytest.approx([(a + b) / 2 for a, b in zip(first, own)], abs=1e-5)
    # an ensemble combined again gives its fits as members each: the plain mean of all three
    three = tmp_path / "three.safetensors"
    assert tpe.main(["--combine", str(both), str(small), "--threshold", "0.6", "--out", str(three)]) == 0
    again = PairEncoder(weights=three)
    assert again.meta["fits"] == 3 and [m["rank"] for m in again.meta["members"]] == [2, 4, 4]
    assert again.probabilities(pairs) == pytest.approx([(a + 2 * b) / 3 for a, b in zip(first, own)], abs=1e-5)
    assert tpe.main(["--combine", str(small), "--threshold", "0.6", "--out", str(tmp_path / "x")]) == 2


def test_bad_weights_or_device_give_one_line_errors(tmp_path):
    from memwatch_overlay.core.errors import ConfigError
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"\xff" * 64)
    with pytest.raises(ConfigError, match="not a pair encoder weights file"):
        PairEncoder(weights=junk)
    with pytest.raises(ConfigError, match="weights not found"):
        PairEncoder(weights=tmp_path / "missing.safetensors")
    nowhere = PairEncoder(device="no-such-device")
    with pytest.raises(ConfigError, match="cannot load the pair encoder") as err:
        nowhere.probabilities([("employer: Google", "hi")])
    assert "\n" not in str(err.value)


def test_an_audit_with_the_pair_encoder_keeps_its_answers_and_a_clean_stderr(tmp_path):
    """The console script, `[embeddings] pair_encoder = true`: the pairs of a user's block that
    the rules and the pair model leave open are read by the encoder (its verdicts in the overlay, under its stamp), the report is valid
    JSON and no model-loading progress bar lands in stderr."""
    import json
    import os
    import sqlite3
    import subprocess

    store = tmp_path / "bot.db"
    conn = sqlite3.connect(store)
    conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, user_id TEXT, text TEXT, created_at TEXT)")
    conn.executemany("INSERT INTO memories (user_id, text, created_at) VALUES (?, ?, ?)", [
        ("u1", "Works at Deloitte", "2026-01-10 10:00:00"),
        ("u1", "my brother just got an offer from Accenture", "2026-06-02 10:00:00"),
        ("u1", "Has one cat, Mochi", "2026-01-11 10:00:00"),
        ("u1", "Mochi and the new kitten are finally getting along", "2026-06-01 10:00:00")])
    conn.commit()
    conn.close()
    cfg = tmp_path / "memwatch.toml"
    cfg.write_text(f'[[sources]]\nname = "bot"\nconnector = "sqlite"\npath = "{store}"\ntable = "memories"\n'
                   'text = "text"\nsubject = "user_id"\ncreated_at = "created_at"\n'
                   "[embeddings]\nenabled = true\npair_encoder = true\n")
    overlay = tmp_path / "o.db"
    exe = Path(sys.executable).with_name("memwatch-overlay")
    done = subprocess.run([str(exe), "audit", "--config", str(cfg), "--overlay", str(overlay), "--as-of",
                           "2026-07-01", "--format", "json"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr
    assert "Loading weights" not in done.stderr and "Traceback" not in done.stderr
    assert json.loads(done.stdout)["summary"]["total"] == 4
    conn = sqlite3.connect(overlay)
    rows = conn.execute("SELECT model, confidence FROM judge_verdicts").fetchall()
    conn.close()
    assert rows and all(m == PairEncoder().model_name for m, _ in rows)
    assert all(0.0 <= p <= 1.0 for _, p in rows)


def test_two_values_of_a_key_that_holds_several_are_not_read():
    """Two facts under one store key of a slot where several values hold at once (languages,
    e-mails, likes) are an addition: the encoder never reads them (it flagged "Speaks
    language 847" after "Speaks language 1496" on bench_detect's keyed store), while the same
    texts without keys are still read."""
    encoder = PairEncoder()
    det = Detector(embedder=Embedder(), pair_encoder=encoder)
    old = FactView("s:t:1", "u1", "language", "Speaks Portuguese", "skill", 0.0)
    new = FactView("s:t:2", "u1", "language", "Speaks Italian", "skill", 86400.0 * 30)
    assert det.compare(new, [old]) == []
    assert encoder.scored == 0
    det.compare(FactView("s:t:3", "u1", None, "Speaks Italian", "skill", 86400.0 * 30),
                [FactView("s:t:4", "u1", None, "Speaks Portuguese", "skill", 0.0)])
    assert encoder.scored == 1


def test_two_facts_whose_keys_name_different_slots_are_not_read():
    """"employer: Works at Acme" and "city: the commute is killing me" are about different things by
    their keys: the encoder reads every open pair, but not such a pair (it read bench_detect's
    keyed store's thousands of them, flagging none); the same texts without keys are read."""
    encoder = PairEncoder()
    det = Detector(embedder=Embedder(), pair_encoder=encoder)
    old = FactView("s:t:1", "u1", "employer", "Works at Acme", "employment", 0.0)
    new = FactView("s:t:2", "u1", "city", "the commute is killing me lately", "location", 86400.0 * 30)
    det.compare(new, [old])
    assert encoder.scored == 0
    det.compare(FactView("s:t:3", "u1", None, new.text, "location", 86400.0 * 30),
                [FactView("s:t:4", "u1", None, old.text, "employment", 0.0)])
    assert encoder.scored == 1
