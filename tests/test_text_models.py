"""The two text classifiers the pair model reads: the aspect model (rules/aspect_model.json:
does an older memory hold a lasting state or record a one-off event? so that a note of an
event is not read as a state a later change outdates) and the manner model
(rules/manner_model.json: how a newer text speaks of a state)."""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from memwatch_overlay.overlay.detect.detector import Detector, FactView
from memwatch_overlay.overlay.detect.learned import OUTDATING_MANNERS, TopicModel, _rules_file, load_learned
from memwatch_overlay.overlay.detect.wordvec import load_word_vectors

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import aspect_corpus  # noqa: E402
import manner_corpus  # noqa: E402

DAY = 86400.0


@pytest.fixture(scope="module")
def learned():
    m = load_learned()
    assert m is not None and m.aspect is not None, "rules/aspect_model.json is not installed"
    assert m.manner is not None, "rules/manner_model.json is not installed"
    return m


# None of these texts is among the aspect model's training memories (checked below): unseen.
EPISODES = ["Had lunch with Mateus near the office in Curitiba on Thursday",
            "Went to a birthday party at Olu's flat in Peckham",
            "Took the train to Glasgow for a friend's graduation",
            "Watched a football match with colleagues from Siemens at a bar",
            "Met the new neighbours at the street party last Saturday"]
STATES = ["Works as a pharmacist at Boots in Coventry",
          "Lives in Curitiba with her two sisters",
          "Has a tortoise called Shelly",
          "Is allergic to shellfish",
          "Drives a blue Skoda Octavia"]


def test_the_texts_below_are_not_training_memories():
    assert not {r["text"] for r in aspect_corpus.rows()} & set(EPISODES + STATES)


@pytest.mark.parametrize("text", EPISODES)
def test_a_note_of_an_event_reads_as_an_episode(learned, text):
    assert learned.episode(text) > 0.5


@pytest.mark.parametrize("text", STATES)
def test_a_lasting_fact_reads_as_a_state(learned, text):
    assert learned.episode(text) < 0.5


def test_the_pair_model_sees_the_older_texts_aspect(learned):
    det = Detector(learned=learned)
    new = FactView("n", "u1", None, "We moved to Porto last month.", "general", 1.8e9)
    olders = [FactView("o1", "u1", None, EPISODES[0], "general", 1.8e9 - 300 * DAY),
              FactView("o2", "u1", None, STATES[1], "general", 1.8e9 - 300 * DAY)]
    episode, state = det.pair_features(new, olders)
    assert episode["o_episode"] > 0.5 > state["o_episode"]
    assert learned.score("rules", episode) < learned.score("rules", state)


def test_the_shipped_file_is_the_two_class_softmax_of_one_logistic_regression():
    """train_detector writes sklearn's one weight vector w of a two-class fit as (-w/2, +w/2):
    the softmax of the two is the sigmoid of w, so the episode probability is the fit's."""
    data = json.loads(_rules_file("aspect_model.json").read_text(encoding="utf-8"))
    assert data["classes"] == ["episode", "state"]
    assert data["bias"][0] == -data["bias"][1]
    # each feature's weights: [0, w_episode, 1, w_state] (the file's flat version 2)
    assert data["version"] == 2
    assert all(len(v) == 4 and v[0] == 0 and v[2] == 1 and v[1] == -v[3] for v in data["weights"].values())
    m = TopicModel(data, load_word_vectors())
    text = EPISODES[1]
    feats = m.features(text)
    z = data["bias"][1] * 2 + sum(2 * m.w[h][3] * x for h, x in feats.items() if h in m.w)   # w_state
    assert m.probs(text)[1] == pytest.approx(1.0 / (1.0 + math.exp(-z)), rel=1e-9)


# Newer texts none of tools/manner_corpus.jsonl holds (checked below), by whether they outdate.
OUTDATING = ["handed back my badge on friday, that was my last day there",
             "we finally signed for the flat in Malmo, keys on monday",
             "Sold the motorbike to a neighbour last weekend.",
             "No more meat for me since January, feeling great"]
NOT_OUTDATING = ["My cousin Dario just started at a bank in Turin.",
                 "thinking about maybe learning the cello next year?",
                 "Should I get a new phone or wait for the next model?",
                 "back in school I used to skate every single day"]


def _outdating(learned, text: str) -> float:
    p = learned.manner.probs(text)
    return sum(x for c, x in zip(learned.manner.classes, p) if c in OUTDATING_MANNERS)


def test_the_manner_texts_below_are_not_training_texts():
    assert not {r["text"] for r in manner_corpus.rows()} & set(OUTDATING + NOT_OUTDATING)


def test_the_manner_model_tells_a_change_from_a_plan_a_question_the_past_and_someone_else(learned):
    assert min(_outdating(learned, t) for t in OUTDATING) > max(_outdating(learned, t) for t in NOT_OUTDATING)


def test_the_pair_model_sees_the_newer_texts_manner(learned):
    det = Detector(learned=learned)
    old = FactView("o", "u1", None, "Owns a Kawasaki motorbike", "general", 1.8e9 - 300 * DAY)
    sold, question = (det.pair_features(FactView("n", "u1", None, t, "general", 1.8e9), [old])[0]
                      for t in (OUTDATING[2], NOT_OUTDATING[2]))
    assert sold["m_out"] > question["m_out"]
    assert {"m_" + c for c in learned.manner.classes} <= set(sold)


# (model file, trainer, least accuracy leaving one author's style out at a time: two classes;
# 13 manners, where chance is ~0.08)
@pytest.mark.train
@pytest.mark.parametrize("name,trainer,least", [("aspect_model.json", "train_aspect", 0.8),
                                                ("manner_model.json", "train_manner", 0.4)])
def test_training_reproduces_the_shipped_file(name, trainer, least):
    pytest.importorskip("sklearn", reason="the [train] extra is not installed")
    import train_detector
    data, acc = getattr(train_detector, trainer)()
    assert data == json.loads(_rules_file(name).read_text(encoding="utf-8"))
    assert acc > least


def test_the_labelled_corpora_use_the_labels_the_models_know(learned):
    """A mislabelled line of a self-written corpus would train the models on a wrong answer:
    every topic is one of the topic model's, every pair's label agrees with its kind."""
    import pair_corpus
    import topic_corpus
    topics = set(learned.topics.classes)
    rows = topic_corpus.rows()
    assert len(rows) >= 2000
    assert {r["topic"] for r in rows} == topics
    assert {r["style"] for r in rows} == {"memory", "message"}
    assert all(r["key"] is None for r in rows if r["style"] == "message")
    pairs = pair_corpus.rows()
    kinds = pair_corpus.OUTDATING_KINDS | pair_corpus.HOLDING_KINDS
    assert {r["kind"] for r in pairs} <= kinds
    assert [r for r in pairs if int(r["label"]) != (r["kind"] in pair_corpus.OUTDATING_KINDS)] == []
    assert {r["slot"] for r in pairs} - pair_corpus.NOT_TOPICS <= topics
