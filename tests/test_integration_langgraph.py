"""The LangGraph BaseStore wrapper, around LangGraph's own InMemoryStore and SqliteStore."""
import asyncio
import json
import sqlite3

import pytest

from memwatch_overlay.overlay.engine.scoring import DAY
from storegen import run

pytestmark = pytest.mark.langgraph     # under CI=true a skip (langgraph missing) fails the run
NS = ("users", "u1", "memories")
T0 = 1_780_000_000.0


@pytest.fixture
def lg():
    pytest.importorskip("langgraph.store.memory", reason="pip install 'memwatch-overlay[test-integrations]'")
    from memwatch_overlay.integrations import langgraph as wrapper
    return wrapper


class Clock:
    now = T0

    def __call__(self):
        return self.now


def test_each_put_is_checked_and_contradicted_items_are_annotated_or_hidden(lg, tmp_path):
    from langgraph.store.memory import InMemoryStore
    inner = InMemoryStore()
    store = lg.WatchedStore(inner, db=str(tmp_path / "o.db"))
    store.put(NS, "employer", {"memory": "Works at Google"})
    assert store.last_watch[0]["ref"] == "langgraph:store:users.u1.memories:employer"
    assert store.last_watch[0]["category"] == "employment" and store.last_watch[0]["contradicts"] == []

    store.put(NS, "job", {"memory": "I just joined Stripe"})
    assert store.last_watch[0]["contradicts"] == ["langgraph:store:users.u1.memories:employer"]

    old = store.get(NS, "employer")
    assert old.value["memory"] == "Works at Google"
    assert old.value["_memwatch"]["status"] == "contradicted"
    assert old.value["_memwatch"]["contradicted_by"] == ["langgraph:store:users.u1.memories:job"]
    assert inner.get(NS, "employer").value == {"memory": "Works at Google"}     # the store's data is untouched

    hiding = lg.WatchedStore(inner, db=str(tmp_path / "o.db"), expired="hide")
    assert hiding.get(NS, "employer") is None
    assert [i.key for i in hiding.search(NS)] == ["job"]
    keeping = lg.WatchedStore(inner, db=str(tmp_path / "o.db"), expired="keep")
    assert keeping.get(NS, "employer").value == {"memory": "Works at Google"}

    store.delete(NS, "job")                   # the newer item is gone: the older one stands again
    assert store.get(NS, "employer").value["_memwatch"]["status"] == "active"
    assert store.get(NS, "job") is None


def test_expired_items_by_age_and_async_puts(lg, tmp_path):
    from langgraph.store.memory import InMemoryStore
    clock = Clock()
    store = lg.WatchedStore(InMemoryStore(), db=str(tmp_path / "o.db"), expired="hide", clock=clock)
    asyncio.run(store.aput(NS, "city", {"memory": "Lives in Jakarta"}))
    asyncio.run(store.aput(NS, "food", {"memory": "Loves sushi"}))
    assert asyncio.run(store.aget(NS, "city")).key == "city"
    clock.now += 800 * DAY        # location half-life 365 days: freshness 0.22, expired
    assert asyncio.run(store.aget(NS, "city")) is None
    assert store.get(NS, "city") is None
    annotating = lg.WatchedStore(store.store, db=str(tmp_path / "o.db"), clock=clock)
    note = annotating.get(NS, "city").value["_memwatch"]
    assert note["label"] == "expired" and note["freshness"] == pytest.approx(0.5 ** (800 / 365), abs=1e-4)


def test_a_sqlite_store_audited_later_lines_up_with_the_wrapper(lg, tmp_path):
    pytest.importorskip("langgraph.store.sqlite", reason="pip install 'memwatch-overlay[test-integrations]'")
    from langgraph.store.sqlite import SqliteStore
    db_file = tmp_path / "store.sqlite"
    conn = sqlite3.connect(db_file, check_same_thread=False, isolation_level=None)
    inner = SqliteStore(conn)
    inner.setup()
    store = lg.WatchedStore(inner, db=str(tmp_path / "o.db"))
    store.put(NS, "employer", {"memory": "Works at Google"})
    store.put(NS, "job", {"memory": "I just joined Stripe"})
    store.put(("users", "u2", "memories"), "city", {"memory": "Lives in Oslo"})
    conn.close()
    store.close()

    proc = run("report", "--overlay", "o.db", "--format", "json", cwd=tmp_path)
    before = {f["ref"]: f for f in json.loads(proc.stdout)["facts"]}
    assert set(before) == {"langgraph:store:users.u1.memories:employer", "langgraph:store:users.u1.memories:job",
                           "langgraph:store:users.u2.memories:city"}
    assert before["langgraph:store:users.u1.memories:employer"]["status"] == "contradicted"
    assert before["langgraph:store:users.u2.memories:city"]["subject"] == "u2"
    # an audit of the same SqliteStore file finds the same facts under the same refs
    proc = run("audit", "store.sqlite", "--overlay", "o.db", "--format", "json", cwd=tmp_path)
    after = {f["ref"]: f for f in json.loads(proc.stdout)["facts"]}
    assert set(after) == set(before)
    assert after["langgraph:store:users.u1.memories:employer"]["status"] == "contradicted"


def test_bad_mode_is_rejected(lg, tmp_path):
    from langgraph.store.memory import InMemoryStore
    with pytest.raises(ValueError, match="expired must be one of"):
        lg.WatchedStore(InMemoryStore(), db=str(tmp_path / "o.db"), expired="delete")
