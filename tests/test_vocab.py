"""One vocabulary: every list of formats, kinds, statuses and labels agrees with core/vocab.py,
and a connector registered through the entry-point group can be configured and built."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from memwatch_overlay.connectors import registry, writer
from memwatch_overlay.core import vocab
from memwatch_overlay.core.errors import ConfigError
from memwatch_overlay.overlay.cli import main as cli
from memwatch_overlay.overlay.engine import scoring
from memwatch_overlay.overlay.output import publish
from memwatch_overlay.overlay.output.formats import RENDERERS
from memwatch_overlay.rules import config


def test_builtin_connector_kinds_agree():
    assert tuple(registry.BUILTIN_CONNECTORS) == vocab.BUILTIN_CONNECTORS
    assert set(writer.WRITERS) == set(vocab.BUILTIN_CONNECTORS) - set(vocab.READ_ONLY_CONNECTORS)
    assert config.CONNECTORS == vocab.BUILTIN_CONNECTORS


def test_report_formats_agree():
    assert tuple(cli.REPORT_FORMATS) == vocab.REPORT_FORMATS == publish.FORMATS
    # every format but the two the CLI writes itself has a renderer
    assert set(vocab.REPORT_FORMATS) - {"table", "json"} <= set(RENDERERS)


def test_labels_and_conditions_agree():
    assert scoring.LABELS == vocab.LABELS
    assert config.LABEL_CONDITIONS == vocab.LABELS + ("contradicted",)
    assert [scoring.label_for(x) for x in (0.9, 0.6, 0.4, 0.1)] == list(vocab.LABELS)


def _plugin(tmp_path, monkeypatch, kind="notebook"):
    """A real installed distribution (dist-info with entry_points.txt) that registers one
    connector in memwatch's entry-point group, importable from tmp_path."""
    (tmp_path / "mw_notebook_plugin.py").write_text(textwrap.dedent("""
        from memwatch_overlay.connectors.json_file import JsonConnector

        class NotebookConnector(JsonConnector):
            name = "notebook"
            description = "a JSON notebook (test plugin)"
    """))
    dist = tmp_path / "mw_notebook_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mw-notebook-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        f"[{vocab.CONNECTOR_ENTRY_POINTS}]\n{kind} = mw_notebook_plugin:NotebookConnector\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return kind


def test_a_connector_registered_by_entry_point_can_be_configured(tmp_path, monkeypatch):
    kind = _plugin(tmp_path, monkeypatch)
    assert kind in config.known_connectors()
    store = tmp_path / "notes.jsonl"
    store.write_text('{"id": 1, "text": "works at Google", "created_at": "2026-01-01T00:00:00Z"}\n')
    toml = tmp_path / "memwatch.toml"
    toml.write_text(textwrap.dedent(f"""
        [[sources]]
        name = "notes"
        connector = "{kind}"
        path = "notes.jsonl"
        text = "text"
        id = "id"
        created_at = "created_at"
    """))
    cfg = config.load_config(toml)
    connector = registry.make_connector(cfg.sources[0])
    assert type(connector).__name__ == "NotebookConnector"
    connector.open()
    try:
        assert [r.text for r in connector.read()] == ["works at Google"]
    finally:
        connector.close()
    # and the installed command audits it, the plugin found through PYTHONPATH
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    out = subprocess.run([sys.executable, "-m", "memwatch_overlay", "audit", "--config", str(toml),
                          "--format", "json", "--overlay", str(tmp_path / "o.db")],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    facts = json.loads(out.stdout)["facts"]
    assert [(f["source"], f["text"]) for f in facts] == [("notes", "works at Google")]


def test_an_unknown_connector_kind_is_refused_naming_the_key(tmp_path):
    toml = tmp_path / "memwatch.toml"
    toml.write_text('[[sources]]\nname = "x"\nconnector = "nosuch"\npath = "x.db"\n')
    with pytest.raises(ConfigError) as e:
        config.load_config(toml)
    assert "sources[0].connector" in str(e.value) or "connector" in str(e.value)
    assert "sqlite" in str(e.value)
