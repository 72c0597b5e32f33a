"""The gate's thresholds: overall, per category and per source, and their validation."""
import pytest

from memwatch_overlay.overlay.engine import gate
from memwatch_overlay.core.errors import ConfigError
from memwatch_overlay.rules.config import parse_config

SUMMARY = {"total": 40, "fresh": 20, "aging": 8, "stale": 7, "expired": 5, "contradicted": 3,
           "avg_freshness": 0.61}
SOURCE = {"name": "bot", "connector": "sqlite", "path": "a.db", "table": "t", "text": "x",
          "id": "id", "created_at": "c"}


def figures(summary):
    stale = summary["stale"] + summary["expired"]
    return {"max_stale_ratio": stale / summary["total"], "max_stale": stale,
            "max_contradictions": summary["contradicted"], "min_avg_freshness": summary["avg_freshness"]}


@pytest.mark.parametrize("key", gate.THRESHOLD_KEYS)
def test_each_threshold_trips_just_past_the_figure(key):
    figure = figures(SUMMARY)[key]
    step = 0.01 if isinstance(figure, float) else 1
    at_limit = gate.evaluate(SUMMARY, {key: figure})
    past = gate.evaluate(SUMMARY, {key: figure + step if key == "min_avg_freshness" else figure - step})
    assert at_limit == []
    assert [v.key for v in past] == [key]
    assert past[0].value == pytest.approx(figure)


def test_messages_name_the_figure_and_the_limit():
    limits = {"max_stale_ratio": 0.1, "max_stale": 3, "max_contradictions": 0, "min_avg_freshness": 0.7}
    messages = [v.message for v in gate.evaluate(SUMMARY, limits)]
    assert messages == ["stale ratio 0.300 > max_stale_ratio 0.1",
                        "12 stale or expired facts > max_stale 3",
                        "3 contradicted facts > max_contradictions 0",
                        "average freshness 0.610 < min_avg_freshness 0.7"]


def test_scoped_limits_apply_only_to_their_scope():
    ci = {"max_stale": 100,
          "categories": {"employment": {"max_stale": 1}, "location": {"max_stale": 50}},
          "sources": {"bot": {"min_avg_freshness": 0.9}, "crm": {}}}
    scoped = gate.scoped_thresholds(ci)
    assert scoped == {"categories": {"employment": {"max_stale": 1}, "location": {"max_stale": 50}},
                      "sources": {"bot": {"min_avg_freshness": 0.9}}}
    by = {"categories": {"employment": {**SUMMARY, "stale": 1, "expired": 1},
                         "location": SUMMARY},
          "sources": {"bot": SUMMARY, "other": {**SUMMARY, "avg_freshness": 0.1}}}
    messages = [v.message for v in gate.evaluate_scoped(scoped, by)]
    assert messages == ["2 stale or expired facts > max_stale 1 (category employment)",
                        "average freshness 0.610 < min_avg_freshness 0.9 (source bot)"]


def test_scope_without_facts_has_nothing_to_violate():
    scoped = gate.scoped_thresholds({"categories": {"skill": {"min_avg_freshness": 0.99}}})
    assert gate.evaluate_scoped(scoped, {"categories": {}}) == []


def test_flags_override_top_level_ci_only():
    ci = {"max_stale_ratio": 0.1, "max_stale": 5, "categories": {"employment": {"max_stale": 1}}}
    merged = gate.merge_thresholds(ci, {"max_stale_ratio": 0.4, "max_stale": None})
    assert merged == {"max_stale_ratio": 0.4, "max_stale": 5}


@pytest.mark.parametrize("ci, field", [
    ({"categories": {"employmnet": {"max_stale": 1}}}, "ci.categories.employmnet"),
    ({"categories": {"employment": {"max_stal": 1}}}, "ci.categories.employment.max_stal"),
    ({"categories": {"employment": 3}}, "ci.categories.employment"),
    ({"sources": {"crm": {"max_stale": 1}}}, "ci.sources.crm"),
    ({"sources": {"bot": {"max_stale_ratio": 2}}}, "ci.sources.bot.max_stale_ratio"),
    ({"max_stale": -1}, "ci.max_stale"),
    ({"min_avg_freshness": 1.5}, "ci.min_avg_freshness"),
    ({"max_contradictions": "0"}, "ci.max_contradictions"),
])
def test_invalid_ci_names_the_key(ci, field):
    with pytest.raises(ConfigError) as err:
        parse_config({"sources": [SOURCE], "ci": ci})
    assert err.value.field == field


def test_valid_scoped_ci_is_kept():
    raw = {"sources": [SOURCE], "rules": [{"category": "pets", "key": ["dog*"]}],
           "ci": {"max_stale_ratio": 0.2, "categories": {"pets": {"max_stale": 0}},
                  "sources": {"bot": {"min_avg_freshness": 0.5}}}}
    assert parse_config(raw).ci == raw["ci"]
