"""[daemon] in memwatch.toml: defaults, strict validation naming the key, CLI exit 2."""
import subprocess
import sys
from pathlib import Path

import pytest

from memwatch_overlay.core.errors import ConfigError
from memwatch_overlay.rules.config import DaemonConfig, load_config, parse_config

ROOT = Path(__file__).resolve().parents[1]


def test_defaults_when_absent():
    assert parse_config({}).daemon == DaemonConfig()


def test_values_are_read():
    d = parse_config({"daemon": {"deletion_scan_seconds": 60, "rescore_seconds": 2.5, "full_resync_seconds": 0,
                                 "log_format": "json", "busy_timeout_seconds": 0}}).daemon
    assert (d.deletion_scan_seconds, d.rescore_seconds, d.full_resync_seconds, d.log_format,
            d.busy_timeout_seconds) == (60.0, 2.5, 0.0, "json", 0.0)


@pytest.mark.parametrize("body,field,words", [
    ({"deletion_scan_secs": 5}, "daemon.deletion_scan_secs", "unknown key"),
    ({"rescore_seconds": 0}, "daemon.rescore_seconds", "> 0"),
    ({"deletion_scan_seconds": -1}, "daemon.deletion_scan_seconds", "> 0"),
    ({"full_resync_seconds": -5}, "daemon.full_resync_seconds", ">= 0"),
    ({"debounce_seconds": "fast"}, "daemon.debounce_seconds", "a number"),
    ({"heartbeat_seconds": True}, "daemon.heartbeat_seconds", "a number"),
    ({"log_format": "xml"}, "daemon.log_format", "text, json"),
    ({"backoff_initial_seconds": 10, "backoff_max_seconds": 5}, "daemon.backoff_max_seconds", ">="),
    ({"debounce_seconds": 3, "max_delay_seconds": 1}, "daemon.max_delay_seconds", ">="),
])
def test_bad_daemon_keys_name_the_key(body, field, words):
    with pytest.raises(ConfigError) as err:
        parse_config({"daemon": body})
    assert err.value.field == field and words in str(err.value)


def test_daemon_must_be_a_table():
    with pytest.raises(ConfigError, match="daemon: must be a table"):
        parse_config({"daemon": 5})


def test_shipped_example_documents_daemon_keys():
    cfg = load_config(ROOT / "memwatch.toml")
    text = (ROOT / "memwatch.toml").read_text()
    assert "[daemon]" in text
    for key in DaemonConfig.__dataclass_fields__:
        assert key in text, f"memwatch.toml does not document daemon.{key}"
    assert cfg.daemon.deletion_scan_seconds > 0


def test_cli_reports_a_bad_daemon_key_with_exit_2(tmp_path):
    conf = tmp_path / "m.toml"
    conf.write_text('[daemon]\nrescore_seconds = "soon"\n[[sources]]\nname = "b"\nconnector = "sqlite"\n'
                    'path = "b.db"\ntable = "t"\ntext = "v"\n')
    out = subprocess.run([sys.executable, "-m", "memwatch_overlay", "daemon", "--config", str(conf)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.startswith("Error: ") and "daemon.rescore_seconds" in out.stderr
    assert "Traceback" not in out.stderr


def test_docs_describe_every_daemon_key_and_ship_a_unit():
    text = (ROOT / "docs" / "daemon.md").read_text()
    for key in DaemonConfig.__dataclass_fields__:
        assert f"`{key}`" in text, f"docs/daemon.md does not describe daemon.{key}"
    unit = (ROOT / "docs" / "memwatch-overlay.service").read_text()
    assert "ExecStart=" in unit and "memwatch-overlay daemon" in unit and "KillSignal=SIGTERM" in unit
