"""memwatch.toml validation: every error names the key."""
from pathlib import Path

import pytest

from memwatch_overlay.core.errors import ConfigError, RuleError
from memwatch_overlay.rules.config import load_config, parse_config
from memwatch_overlay.rules.categorize import Categorizer

ROOT = Path(__file__).resolve().parents[1]


def test_shipped_example_config_is_valid():
    cfg = load_config(ROOT / "memwatch.toml")
    assert cfg.sources[0].name == "bot"
    assert cfg.sources[0].resolved_path == ROOT / "examples" / "my_agent.db"
    assert cfg.categories["employment"].half_life_days == 90
    assert cfg.categories["employment"].ttl_days == 540
    assert cfg.categories["skill"].half_life_days == 1095     # defaults kept
    assert cfg.actions[0].set == {"expires_at": "now"}
    assert cfg.ci["max_stale_ratio"] == 0.5


def source(**extra):
    return {"name": "bot", "connector": "sqlite", "path": "x.db", "table": "t", "text": "v", **extra}


@pytest.mark.parametrize("raw,field", [
    ({"sources": [source(colour="red")]}, "sources[0].colour"),
    ({"sources": [source(connector="mysql")]}, "sources[0].connector"),
    ({"sources": [{"connector": "sqlite", "path": "x"}]}, "sources[0].name"),
    ({"sources": [source(path=None) | {"path": 3}]}, "sources[0].path"),
    ({"sources": [{k: v for k, v in source().items() if k != "path"}]}, "sources[0].path"),
    ({"sources": [source(query="SELECT 1")]}, "sources[0].query"),
    ({"sources": [source(), source()]}, "sources[1].name"),
    ({"sources": [source(id=[1, 2])]}, "sources[0].id"),
    ({"scoring": {"fresh": "high"}}, "scoring.fresh"),
    ({"scoring": {"fresh": 0.4, "aging": 0.5}}, "scoring"),
    ({"categories": {"employment": {"half_life_days": 0}}}, "categories.employment.half_life_days"),
    ({"categories": {"employment": {"halflife": 9}}}, "categories.employment.halflife"),
    ({"ci": {"max_stale_ratio": "10%"}}, "ci.max_stale_ratio"),
    ({"ci": {"max_stale_ration": 0.1}}, "ci.max_stale_ration"),
    ({"overlay": {"path": 1}}, "overlay.path"),
    ({"surprise": 1}, "surprise"),
    ({"rules": [{"key": "x"}]}, "rules[0].category"),
    ({"rules": [{"category": "x", "text": ["(unclosed"]}]}, "rules[0].text[0]"),
    ({"actions": [{"when": "old", "do": "set", "set": {"a": 1}}]}, "actions[0].when"),
    ({"actions": [{"when": "stale", "do": "explode"}]}, "actions[0].do"),
    ({"actions": [{"when": "stale", "do": "set"}]}, "actions[0].set"),
    ({"sources": [source()], "actions": [{"when": "stale", "do": "annotate", "source": "nope"}]}, "actions[0].source"),
])
def test_errors_name_the_key(raw, field):
    with pytest.raises(ConfigError) as info:
        parse_config(raw, Path("/tmp/memwatch.toml"))
    assert info.value.field == field
    assert field in str(info.value) and "/tmp/memwatch.toml" in str(info.value)


def test_bad_regex_is_a_rule_error():
    with pytest.raises(RuleError):
        parse_config({"rules": [{"category": "x", "text": "[a-"}]})


def test_invalid_toml_names_the_file(tmp_path):
    p = tmp_path / "memwatch.toml"
    p.write_text("[sources\nname = 1\n")
    with pytest.raises(ConfigError, match="invalid TOML") as info:
        load_config(p)
    assert str(p) in str(info.value)


def test_paths_are_relative_to_the_config_folder(tmp_path):
    p = tmp_path / "sub" / "memwatch.toml"
    p.parent.mkdir()
    p.write_text('[[sources]]\nname = "b"\nconnector = "sqlite"\npath = "../agent.db"\ntable = "t"\ntext = "v"\n')
    assert load_config(p).sources[0].resolved_path.resolve() == (tmp_path / "agent.db").resolve()


def test_category_precedence_explicit_then_rules_then_default_pack():
    cfg = parse_config({"rules": [{"category": "preference", "key": ["food*"]},
                                  {"category": "skill", "source": "other", "text": ["works at"]}]})
    c = Categorizer(cfg.rules, known=set(cfg.categories))
    assert c.categorize("bot", "food_likes", "Works at Google", explicit="employment") == "employment"
    assert c.categorize("bot", "food_likes", "Works at Google") == "preference"
    # the rule scoped to source "other" does not apply to "bot": the default pack decides
    assert c.categorize("bot", None, "Works at Google") == "employment"
    assert c.categorize("other", None, "Works at Google") == "skill"
    assert c.categorize("bot", None, "The sky was grey") == "general"
    # an unknown explicit category falls through to the rules
    assert c.categorize("bot", None, "Lives in Lagos", explicit="weird") == "location"


@pytest.mark.parametrize("text,category", [
    ("Priya's personal email is priya@example.com", "contact"),
    ("Call me on +62 812 5550 1234", "contact"),
    ("Works at Google as a product analyst", "employment"),
    ("Just joined Stripe as a staff engineer", "employment"),
    ("Moved to Surabaya last month", "location"),
    ("Tomasz is dating someone named Ola", "relationship"),
    ("Speaks French fluently", "skill"),
    ("Loves Thai food", "preference"),
    ("Thinks remote work is overrated", "belief"),
    ("Was born in 1990", "fact"),
])
def test_default_pack_sorts_common_memories(text, category):
    assert Categorizer().categorize(None, None, text) == category
