"""Reading qdrant-client local storage without qdrant-client: pickles are decoded by an
unpickler that never imports or calls what they name."""
from __future__ import annotations

import json
import os
import pickle
import sys
from pathlib import Path

import pytest

from memwatch_overlay.connectors.presets.qdrant_local import (
    Inert,
    QdrantPayloads,
    find_storages,
    point_keys,
    point_payload,
    safe_loads,
)

AGENT_STORES = Path(__file__).parent / "fixtures" / "agent-stores"


class _Exploit:
    """Pickles as a call to os.system / open: loading it with plain pickle would run it."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class _Writer:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


class PointStruct:
    """Shaped like qdrant's pydantic v2 model once pickled (state holds `__dict__`)."""

    def __init__(self, id, payload):
        self.id, self.payload, self.vector = id, payload, [0.1, 0.2]

    def __getstate__(self):
        return {"__dict__": dict(self.__dict__), "__pydantic_extra__": None,
                "__pydantic_fields_set__": {"id", "payload", "vector"}, "__pydantic_private__": None}

    def __setstate__(self, state):
        self.__dict__.update(state["__dict__"])


@pytest.mark.parametrize("payload_cls", [_Exploit, _Writer])
def test_globals_in_a_pickle_are_never_called(tmp_path, payload_cls):
    marker = tmp_path / "pwned"
    data = pickle.dumps({"payload": {"user_id": payload_cls(marker)}})
    assert not marker.exists()
    obj = safe_loads(data)
    assert not marker.exists()
    assert isinstance(obj["payload"]["user_id"], Inert)


def test_find_class_imports_nothing():
    # GLOBAL opcode naming a module that does not exist, then a call of it
    data = b"cmemwatch_no_such_module_xyz\nThing\n(I1\ntR."
    with pytest.raises(ModuleNotFoundError):
        pickle.loads(data)
    before = set(sys.modules)
    obj = safe_loads(data)
    assert set(sys.modules) == before
    assert isinstance(obj, Inert) and obj.args == (1,)


def test_builtin_eval_is_not_evaluated(tmp_path):
    marker = tmp_path / "pwned"
    data = b"cbuiltins\neval\n(V__import__('pathlib').Path(" + repr(str(marker)).encode() + b").touch()\ntR."
    safe_loads(data)
    assert not marker.exists()
    pickle.loads(data)   # the same bytes do run under plain pickle: the test would notice a leak
    assert marker.exists()


def test_point_payload_from_a_pydantic_style_pickle():
    pid, payload = point_payload(pickle.dumps(PointStruct("abc", {"user_id": "u_x", "expiration_date": "2026-12-04"})))
    assert pid == "abc" and payload == {"user_id": "u_x", "expiration_date": "2026-12-04"}


def test_garbage_is_an_error_not_a_crash_of_the_lookup(tmp_path):
    import sqlite3
    storage = tmp_path / "qdrant" / "collection" / "memories" / "storage.sqlite"
    storage.parent.mkdir(parents=True)
    db = sqlite3.connect(storage)
    db.execute("CREATE TABLE points (id TEXT PRIMARY KEY, point BLOB)")
    db.execute("INSERT INTO points VALUES (?, ?)", (point_keys("bad")[0], b"\x80\x04not a pickle"))
    db.execute("INSERT INTO points VALUES (?, ?)",
               (point_keys("good")[0], pickle.dumps(PointStruct("good", {"user_id": "u1"}))))
    db.commit()
    db.close()
    assert find_storages(tmp_path / "history.db") == [storage]
    payloads = QdrantPayloads([storage])
    payloads.open()
    try:
        assert payloads.lookup(["bad", "good", "missing"]) == {"good": {"user_id": "u1"}}
        assert payloads.errors
    finally:
        payloads.close()


def test_fixture_payloads_name_the_manifest_users(agent_store):
    folder = agent_store("mem0")
    manifest = json.loads((folder / "manifest.json").read_text())
    storages = find_storages(folder / "history.db")
    assert len(storages) == 1
    payloads = QdrantPayloads(storages)
    payloads.open()
    try:
        live = [i for i in manifest["items"] if i["item_id"] not in manifest["deleted_items"]]
        found = payloads.lookup([i["memory_id"] for i in live])
        assert {i["memory_id"]: i["user"] for i in live} == {k: v["user_id"] for k, v in found.items()}
        gone = [i["memory_id"] for i in manifest["items"] if i["item_id"] in manifest["deleted_items"]]
        assert payloads.lookup(gone) == {}
    finally:
        payloads.close()
