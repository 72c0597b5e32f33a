"""`memwatch-overlay mcp`, driven by the MCP SDK's own client over stdio."""
import json
import shutil

import pytest

from memwatch_overlay import MemWatch
from memwatch_overlay.overlay.store.database import OverlayStore
from conftest import AGENT_STORES
from storegen import EXE, run

pytestmark = pytest.mark.mcp     # under CI=true a skip (SDK missing) fails the run

TOOLS = {"check_utterance", "get_freshness", "list_stale", "list_contradicted", "mark_refreshed", "forget"}


@pytest.fixture
def overlay(tmp_path):
    """A LangGraph store audited at its reference time (its facts are months to years old), plus API facts."""
    shutil.copy(AGENT_STORES / "langgraph" / "langgraph_store.sqlite", tmp_path / "lg.sqlite")
    path = tmp_path / "overlay.db"
    assert run("audit", "lg.sqlite", "--overlay", path, "--as-of", "2026-11-29T15:57:40Z",
               cwd=tmp_path).returncode in (0, 1)
    with MemWatch(db=str(path)) as mw:
        mw.add("employer", "Google", category="employment")
        mw.add("city", "Jakarta", category="location")
    return path


def run_async(fn, *args):
    import anyio
    return anyio.run(fn, *args)


def is_error(result) -> bool:
    """CallToolResult.is_error (mcp 2) / .isError (mcp 1)."""
    return bool(getattr(result, "is_error", getattr(result, "isError", False)))


def payload(result):
    """A tool result's JSON: structured content when the server sent it, else the text block."""
    assert not is_error(result), result.content
    data = getattr(result, "structured_content", getattr(result, "structuredContent", None))
    if data is not None:
        return data["result"] if set(data) == {"result"} else data
    return json.loads(result.content[0].text)


@pytest.fixture(autouse=True)
def sdk():
    pytest.importorskip("mcp", reason="the `mcp` extra (the MCP Python SDK) is not installed")


async def session_run(overlay, body):
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    params = StdioServerParameters(command=EXE, args=["mcp", "--overlay", str(overlay)])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await body(session)


def test_tools_and_resources_over_stdio(overlay):
    async def body(s):
        out = {}
        out["tools"] = {t.name for t in (await s.list_tools()).tools}
        out["resources"] = {str(r.uri) for r in (await s.list_resources()).resources}
        out["fresh"] = payload(await s.call_tool("get_freshness", {"ref": "employer"}))
        out["stale"] = payload(await s.call_tool("list_stale", {"subject": "u_priya"}))
        out["stale_all"] = payload(await s.call_tool("list_stale", {"limit": 500}))
        out["victim"] = victim = out["stale"][0]["ref"]
        out["refreshed"] = payload(await s.call_tool("mark_refreshed", {"ref": victim}))
        out["stale_after"] = payload(await s.call_tool("list_stale", {"subject": "u_priya"}))
        out["forgot"] = payload(await s.call_tool("forget", {"ref": "city"}))
        out["gone"] = await s.call_tool("get_freshness", {"ref": "city"})
        out["stats"] = json.loads((await s.read_resource("memwatch://stats")).contents[0].text)
        out["health"] = json.loads((await s.read_resource("memwatch://health")).contents[0].text)
        return out

    out = run_async(session_run, overlay, body)
    victim = out["victim"]
    assert TOOLS <= out["tools"]
    assert {"memwatch://stats", "memwatch://health"} <= out["resources"]

    assert out["fresh"]["ref"] == "memwatch:facts:employer" and out["fresh"]["label"] == "fresh"
    assert out["fresh"]["category"] == "employment" and out["fresh"]["confidence"] == 0.9

    # scored at the real clock, the fixture's facts are all a year or more older than at its reference time
    assert out["stale"] and {f["subject"] for f in out["stale"]} == {"u_priya"}
    assert all(f["label"] in ("stale", "expired") for f in out["stale_all"])
    assert {f["subject"] for f in out["stale_all"]} > {"u_priya"}
    assert out["refreshed"]["ref"] == victim and out["refreshed"]["label"] == "fresh"
    assert victim not in {f["ref"] for f in out["stale_after"]}
    assert len(out["stale_after"]) == len(out["stale"]) - 1

    assert out["forgot"] == {"forgotten": 1, "ref": "city"}
    assert is_error(out["gone"]) and "no fact 'city'" in out["gone"].content[0].text

    assert out["stats"]["by_source"]["memwatch"]["total"] == 1
    assert out["stats"]["summary"]["total"] == sum(s["total"] for s in out["stats"]["by_source"].values())
    assert out["health"]["ok"] is True and out["health"]["integrity"] == "ok"
    assert {s["name"] for s in out["health"]["sources"]} == {"langgraph", "memwatch"}   # preset-named


def test_check_utterance_and_list_contradicted(overlay):
    async def body(s):
        checked = payload(await s.call_tool("check_utterance", {
            "text": "I just moved to Surabaya for my new job at Anthropic", "subject": "me"}))
        contradicted = payload(await s.call_tool("list_contradicted", {"subject": "u_priya"}))
        return checked, contradicted

    with OverlayStore(overlay) as store:     # a contradiction between two of u_priya's memories
        older, newer = [r[0] for r in store.conn.execute(
            "SELECT id FROM facts WHERE subject = 'u_priya' ORDER BY id LIMIT 2")]
        with store.transaction():
            store.add_contradiction(older, newer, "value", 0.9, "planted", None, 1.0)
            store.apply_contradiction_status()
        older_ref = store.conn.execute("SELECT ref FROM facts WHERE id = ?", (older,)).fetchone()[0]
        newer_ref = store.conn.execute("SELECT ref FROM facts WHERE id = ?", (newer,)).fetchone()[0]
    with MemWatch(db=str(overlay), subject="me") as mw:
        mw.add("employer", "Google", category="employment")
        mw.add("city", "Jakarta", category="location")
    checked, contradicted = run_async(session_run, overlay, body)
    assert checked["summary"] == "2 contradiction(s) detected. 0 stale memories."
    assert {(u["action"], u["key"], u["new_value"]) for u in checked["suggested_updates"]} == {
        ("UPDATE", "employer", "Anthropic"), ("UPDATE", "city", "Surabaya")}
    listed = {f["ref"]: f for f in contradicted}
    assert newer_ref in listed[older_ref]["contradicted_by"]
    assert all(f["status"] == "contradicted" and f["subject"] == "u_priya" for f in contradicted)
    assert newer_ref not in listed or listed[newer_ref]["contradicted_by"]


def test_a_bad_overlay_path_is_a_one_line_error(tmp_path):
    (tmp_path / "not-a-db").write_text("hello, I am not SQLite " * 100)
    proc = run("mcp", "--overlay", "not-a-db", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith("Error: ") and "Traceback" not in proc.stderr


def test_server_info_limits_descriptions_and_subject(overlay):
    from memwatch_overlay.core.version import __version__

    async def body(s):
        out = {"tools": (await s.list_tools()).tools}
        out["minus"] = await s.call_tool("list_stale", {"limit": -1})
        out["zero"] = await s.call_tool("list_contradicted", {"limit": 0})
        out["huge"] = payload(await s.call_tool("list_stale", {"limit": 10**9}))
        out["nosubject"] = await s.call_tool("check_utterance", {"text": "I moved to Oslo"})
        return out

    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def with_info():
        params = StdioServerParameters(command=EXE, args=["mcp", "--overlay", str(overlay)])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                info = getattr(init, "server_info", None) or init.serverInfo
                return info, await body(session)

    info, out = run_async(with_info)
    assert info.name == "memwatch-overlay" and info.version == __version__ and __version__
    for t in out["tools"]:
        assert not any(line.startswith(" ") for line in t.description.splitlines()), (t.name, t.description)
    assert is_error(out["minus"]) and "limit must be" in out["minus"].content[0].text
    assert is_error(out["zero"])
    assert 0 < len(out["huge"]) <= 1000
    # the fixture holds three users (plus API facts): comparing with all of them is refused
    assert is_error(out["nosubject"]) and "several subjects" in out["nosubject"].content[0].text
    desc = {t.name: t.description for t in out["tools"]}["check_utterance"]
    assert "required when the overlay holds several users" in desc


def test_check_utterance_without_subject_when_there_is_one(tmp_path):
    from memwatch_overlay.overlay.mcp_server import OverlayTools
    path = tmp_path / "one.db"
    with MemWatch(db=str(path)) as mw:
        mw.add("city", "Jakarta", category="location")
    checked = OverlayTools(overlay_path=str(path)).check_utterance("I just moved to Surabaya")
    assert checked["summary"].startswith("1 contradiction(s)")


def test_a_missing_overlay_is_refused_unless_create(tmp_path):
    proc = run("mcp", "--overlay", "typo.db", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith("Error: --overlay: no overlay at typo.db")
    assert "--create" in proc.stderr and not (tmp_path / "typo.db").exists()

    async def body(s):
        return json.loads((await s.read_resource("memwatch://health")).contents[0].text)

    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def created():
        params = StdioServerParameters(command=EXE, args=["mcp", "--overlay", "new.db", "--create"],
                                       cwd=str(tmp_path))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await body(session)

    health = run_async(created)
    assert health["ok"] is True and (tmp_path / "new.db").exists()
