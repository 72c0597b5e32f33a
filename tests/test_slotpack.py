"""Slot pack loading and validation: a bad pack fails loudly, naming the offending key."""
from __future__ import annotations

import pytest

from memwatch_overlay.overlay.detect.detector import Detector, FactView
from memwatch_overlay.core.errors import ConfigError
from memwatch_overlay.overlay.detect.pack import compile_pack, load_pack

MINIMAL = """
version = 1
[anchors]
value_stop = ["at", "in", "now"]
[[slots]]
name = "employer"
category = "employment"
value = "name"
keys = ["employer"]
assert = ['\\bworks? at {VAL}']
"""


def test_default_pack_loads_and_documents_its_format():
    pack = load_pack()
    assert pack.slot("employer").category == "employment"
    assert pack.slot_for_key("Job_Title").name == "job_title"
    assert pack.slot_for_key("memory") is None
    assert len(pack.slots) >= 15 and pack.cues
    assert pack.source == "rules/slots.toml"


def test_user_pack_from_a_path(tmp_path):
    p = tmp_path / "mine.toml"
    p.write_text(MINIMAL)
    d = Detector(str(p))
    old = FactView("a", "u", None, "works at Initech", "employment", 0.0)
    new = FactView("b", "u", None, "Now works at Globex", "employment", 10.0)
    assert [c.older for c in d.compare(new, [old])] == ["a"]
    assert d.category_of("lives in Paris") is None      # this pack knows no location slot


@pytest.mark.parametrize("mutate,field", [
    (lambda t: t.replace("version = 1", "version = 2"), "version"),
    (lambda t: t.replace('category = "employment"', 'category = "jobs"'), "slots[0].category"),
    (lambda t: t.replace("'\\bworks? at {VAL}'", "'works at ('"), "slots[0].assert[0]"),
    (lambda t: t.replace("{VAL}", "{NOPE}"), "slots[0].assert[0]"),
    (lambda t: t.replace('value = "name"', 'value = "colour"'), "slots[0].value"),
    (lambda t: t.replace('keys = ["employer"]', 'keys = "employer"'), "slots[0].keys"),
    (lambda t: t + 'colour = "red"\n', "slots[0].colour"),
    (lambda t: t + 'yes = "can do it"\n', "slots[0].yes"),
    (lambda t: t.replace("[anchors]", "[anchors]\nbogus = []"), "anchors.bogus"),
    (lambda t: t + '[guards]\nhedge = [1]\n', "guards.hedge[0]"),
    (lambda t: t + "[[slots]]\nname = 'employer'\ncategory = 'fact'\nassert = ['x']\n", "slots[1].name"),
])
def test_validation_errors_name_the_key(tmp_path, mutate, field):
    p = tmp_path / "bad.toml"
    p.write_text(mutate(MINIMAL))
    with pytest.raises(ConfigError) as e:
        load_pack(p)
    assert e.value.field == field
    assert field in str(e.value) and str(p) in str(e.value)


def test_invalid_toml_and_missing_file(tmp_path):
    p = tmp_path / "broken.toml"
    p.write_text("version = = 1")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_pack(p)
    with pytest.raises(ConfigError, match="cannot read"):
        load_pack(tmp_path / "missing.toml")


def test_compile_pack_rejects_a_slot_without_rules():
    with pytest.raises(ConfigError) as e:
        compile_pack({"version": 1, "slots": [{"name": "x", "category": "fact"}]})
    assert e.value.field == "slots[0]"


def test_a_packs_cue_kinds_end_weak_and_absent(tmp_path):
    """[cues] end / weak / absent: a weak cue ends nothing when the temporary guard marks what
    follows it; an absent cue ("-free") ends having the thing but restates an older fact the
    avoids guard marks as avoiding it."""
    p = tmp_path / "cues.toml"
    p.write_text(MINIMAL + """
[guards]
temporary = ['\\bfor a week\\b']
avoids = ['\\ballerg']
[cues]
end = ['\\bsold\\b']
weak = ['\\bleft\\b']
absent = ['\\b(?P<o>\\w+)-free\\b']
""")
    pack = load_pack(p)
    assert [(c.weak, c.absent) for c in pack.cues] == [(False, False), (False, True), (True, False)]
    d = Detector(str(p), learned=False)

    def ends(old: str, new: str) -> bool:
        return bool(d.compare(FactView("b", "u", None, new, "general", 10.0),
                              [FactView("a", "u", None, old, "general", 0.0)]))
    assert ends("has a kayak called Otter", "left Otter at the club")
    assert not ends("has a kayak called Otter", "left Otter at the club for a week")
    assert ends("drinks gluten beer", "gluten-free from now on")
    assert not ends("allergic to gluten", "gluten-free from now on")
