"""LanceDB sources: CrewAI 1.x's memories.lance (committed, written by CrewAI), read read-only
through lancedb, incrementally by fragment, zero config on the folder."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import storeplan as plan
from conftest import AGENT_STORES
from storegen import run

pytestmark = pytest.mark.integrations
lancedb = pytest.importorskip("lancedb", reason="pip install 'memwatch-overlay[lancedb]'")

from memwatch_overlay.connectors.recognize import detect, kind_of, source_from_detection  # noqa: E402
from memwatch_overlay.connectors.registry import catalog, make_connector, preset_class  # noqa: E402
from memwatch_overlay.rules.config import SourceConfig  # noqa: E402

FIXTURE = "crewai-lancedb"


def manifest() -> dict:
    return json.loads((AGENT_STORES / FIXTURE / "manifest.json").read_text())


def digest(folder: Path) -> dict[str, tuple[str, int]]:
    return {str(p.relative_to(folder)): (hashlib.blake2b(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def crewai_row(rid: str, content: str, user: str, when: str) -> dict:
    """A row as CrewAI's LanceDBStorage._record_to_row() writes it."""
    return {"id": rid, "content": content, "scope": f"/user/{user}", "categories_str": "[]",
            "metadata_str": "{}", "importance": 0.5, "created_at": when, "last_accessed": when,
            "source": user, "private": False, "vector": plan.embed(content)}


def open_crewai(folder: Path):
    src = source_from_detection(detect(str(folder)), name="crewai")
    conn = make_connector(src)
    conn.open()
    return conn


def test_the_folder_is_recognised_as_crewai_on_lancedb(agent_store):
    folder = agent_store(FIXTURE)
    assert kind_of(str(folder)) == "lancedb"
    assert kind_of(str(folder / "memories.lance")) == "lancedb"
    det = detect(str(folder))
    assert det.matches[0].preset == "crewai"
    assert det.matches[0].defaults["subject"] == "source"
    # one preset name, two store kinds: CrewAI 0.x's SQLite file and 1.x's LanceDB table
    assert preset_class("crewai", kind="lancedb").kind == "lancedb"
    assert preset_class("crewai", kind="sqlite").defaults["table"] == "long_term_memories"
    kinds = {row["kind"] for row in catalog()["presets"] if row["name"] == "crewai"}
    assert kinds == {"sqlite", "lancedb"}


@pytest.mark.slow
@pytest.mark.parametrize("target", [".", "memories.lance"])
def test_zero_config_audit_of_crewai_memory(agent_store, tmp_path, target):
    folder = agent_store(FIXTURE)
    before = digest(folder)
    proc = run("audit", str(folder / target), "--as-of", plan.REFERENCE_ISO, "--overlay", tmp_path / "o.db",
               "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["sources"][0]["preset"] == "crewai" and report["sources"][0]["connector"] == "lancedb"
    facts = {f["pk"]["id"]: f for f in report["facts"]}
    items = {i["item_id"]: i for i in manifest()["items"]}
    for item in items.values():
        if item["deleted"]:
            assert item["source"]["pk"]["id"] not in facts
            continue
        fact = facts[item["source"]["pk"]["id"]]
        assert (fact["subject"], fact["text"]) == (item["user"], item["text"])
        assert fact["age_days"] == pytest.approx(item["age_days"])
    refs = {i: facts[items[i]["source"]["pk"]["id"]]["ref"] for i in items if not items[i]["deleted"]}
    found = {(c["older"], c["newer"]) for c in report["contradictions"]}
    assert found == {(refs[old], refs[new]) for old, new in plan.CONTRADICTIONS}
    assert digest(folder) == before          # read-only: not a byte or an mtime changed


def test_incremental_reads_follow_new_fragments_and_versions(agent_store):
    folder = agent_store(FIXTURE)
    conn = open_crewai(folder)
    first = list(conn.read(None))
    assert len(first) == 13 and conn.read_all
    cursor = conn.cursor
    assert conn.has_changes() is False               # the version read last is the latest
    assert list(conn.read(cursor)) == [] and conn.rows_read == 13

    table = lancedb.connect(str(folder)).open_table("memories")   # the bot writes, as CrewAI would
    table.add([crewai_row("new-1", "User adopted a cat named Miso.", "u_chen", "2026-11-29T10:00:00")])
    assert conn.has_changes() is True
    added = list(conn.read(cursor))
    assert [(r.pk, r.subject, r.text) for r in added] == [({"id": "new-1"}, "u_chen", "User adopted a cat named Miso.")]
    assert conn.rows_read == 14                      # the new fragment only

    cursor = conn.cursor
    victim = first[0].pk["id"]
    table.update(where=f"id = '{victim}'", values={"last_accessed": "2026-11-29T11:00:00"})   # a recall's touch
    touched = list(conn.read(cursor))
    assert [r.pk["id"] for r in touched] == [victim]
    assert touched[0].accessed_at == pytest.approx(plan.REFERENCE.timestamp() - 3600)

    table.delete("id = 'new-1'")                      # deletions: found by the key-only pass
    keys = {k["id"] for k in conn.keys()}
    assert "new-1" not in keys and victim in keys and len(keys) == 13
    conn.close()


def test_the_generic_lancedb_connector_maps_any_table(tmp_path):
    db = lancedb.connect(str(tmp_path / "lance"))
    db.create_table("notes", [{"nid": 1, "body": "User lives in Oslo.", "owner": "u1", "ts": "2026-01-01T00:00:00"}])
    src = SourceConfig(name="notes", connector="lancedb", path=str(tmp_path / "lance"), table="notes", id=["nid"],
                       text="body", subject="owner", created_at="ts")
    conn = make_connector(src)
    conn.open()
    (rec,) = list(conn.read(None))
    assert (rec.pk, rec.text, rec.subject, rec.table) == ({"nid": "1"}, "User lives in Oslo.", "u1", "notes")
    conn.close()


def test_a_missing_table_is_named(tmp_path, agent_store):
    folder = agent_store(FIXTURE)
    from memwatch_overlay.core.errors import ConnectorError
    conn = make_connector(SourceConfig(name="x", connector="lancedb", path=str(folder), table="nope", id=["id"],
                                       text="content"))
    conn.open()
    with pytest.raises(ConnectorError, match=r"no table 'nope' \(tables: memories\)"):
        list(conn.read(None))


# -- re-audits without lancedb: the latest manifest from the folder's names, kept descriptions --

def test_the_latest_manifest_is_the_version_lancedb_opens(tmp_path):
    from memwatch_overlay.connectors.lancedb import folder_signature, latest_manifest
    db = lancedb.connect(str(tmp_path / "lance"))
    table = db.create_table("notes", [{"nid": 0, "body": "first"}])
    for i in range(1, 12):             # past ten versions: a name sorted as text would pick another
        table.add([{"nid": i, "body": f"note {i}"}])
        if i % 4 == 0:
            table.delete(f"nid = {i - 1}")
        version = lancedb.connect(str(tmp_path / "lance")).open_table("notes").version
        name = latest_manifest(tmp_path / "lance" / "notes.lance").name
        assert name == f"{(1 << 64) - 1 - version}.manifest"
        assert folder_signature(tmp_path / "lance") == [["notes.lance", name]]
    assert folder_signature(tmp_path / "lance" / "notes.lance") == folder_signature(tmp_path / "lance")


def test_the_older_manifest_names_count_as_numbers(tmp_path):
    from memwatch_overlay.connectors.lancedb import latest_manifest
    versions = tmp_path / "t.lance" / "_versions"
    versions.mkdir(parents=True)
    for name in ("1.manifest", "2.manifest", "10.manifest", "9.manifest", "latest_version_hint.json",
                 "11.manifest-tmp", "x.manifest"):
        (versions / name).write_text("")
    assert latest_manifest(tmp_path / "t.lance").name == "10.manifest"
    assert latest_manifest(tmp_path / "empty.lance") is None


def poisoned_lancedb(tmp_path: Path) -> dict:
    """An environment in which `import lancedb` fails (a package of that name first on the path)."""
    poison = tmp_path / "poison" / "lancedb"
    poison.mkdir(parents=True)
    (poison / "__init__.py").write_text("raise ImportError('lancedb must not be imported here')\n")
    return {"PYTHONPATH": str(tmp_path / "poison")}


@pytest.mark.slow
def test_an_unchanged_folder_is_re_audited_without_lancedb(agent_store, tmp_path):
    folder = agent_store(FIXTURE)
    overlay = tmp_path / "o.db"
    audit = ("audit", str(folder), "--as-of", plan.REFERENCE_ISO, "--overlay", overlay, "--format", "json")
    first = run(*audit, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    poisoned = poisoned_lancedb(tmp_path)
    again = run(*audit, cwd=tmp_path, **poisoned)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["facts"] == json.loads(first.stdout)["facts"]
    # the bot deletes a memory: a new version, which only lancedb reads
    victim = json.loads(first.stdout)["facts"][0]["pk"]["id"]
    lancedb.connect(str(folder)).open_table("memories").delete(f"id = '{victim}'")
    refused = run(*audit, cwd=tmp_path, **poisoned)
    assert refused.returncode == 2 and "[lancedb] extra" in refused.stderr
    after = run(*audit, cwd=tmp_path)
    assert after.returncode == 0, after.stderr
    gone = [f for f in json.loads(after.stdout)["facts"] if f["pk"]["id"] == victim]
    assert [f["status"] for f in gone] == ["deleted"]


def test_a_kept_description_in_another_shape_is_not_trusted(agent_store, tmp_path):
    from memwatch_overlay.connectors.lancedb import folder_signature
    from memwatch_overlay.overlay.engine.audit import OverlayDescribedFolders
    from memwatch_overlay.overlay.store.database import OverlayStore
    folder = agent_store(FIXTURE)
    with OverlayStore(tmp_path / "o.db") as store:
        kept = OverlayDescribedFolders(store)
        first = detect(str(folder), kept)
        key = f"described:{folder.resolve()}"
        entry = store.get_meta(key)
        assert entry["signature"] == folder_signature(folder)
        assert detect(str(folder), kept).tables == first.tables
        for broken in ({**entry, "tables": [{"name": "memories"}]}, {**entry, "tables": "x"}, ["x"],
                       {**entry, "signature": [["memories.lance", "1.manifest"]]}):
            store.set_meta(key, broken)
            assert kept.described(str(folder.resolve()), folder_signature(folder)) is None
            assert detect(str(folder), kept).tables == first.tables      # described again, and kept
            assert store.get_meta(key) == entry
