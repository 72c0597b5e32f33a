"""The one error choke point (overlay/cli/errors.py), through the installed console script.

Expected errors -> one `Error: ...` line and exit 2; a bug -> exit 70 and `--traceback`
shows it; Ctrl-C -> 130; a reader that closes the pipe early -> 141, never the gate's 1.
The unexpected errors come from a real connector plugin (an installed distribution in the
entry-point group) whose read() fails the way a bug would.
"""
from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from memwatch_overlay.core import vocab
from memwatch_overlay.core.errors import ConfigError, ExitStatus
from memwatch_overlay.overlay.cli.errors import expected_message, run_guarded, wants_traceback
from storegen import AS_OF, EXE, make_store


def run(*args, cwd, env=None, timeout=120):
    return subprocess.run([EXE, *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "COLUMNS": "120", **(env or {})}, timeout=timeout)


def plugin(tmp_path: Path, body: str) -> dict:
    """Install (on PYTHONPATH) a connector `broken` whose read() runs `body`; return the env."""
    (tmp_path / "mw_broken_plugin.py").write_text(textwrap.dedent("""
        import time
        from pathlib import Path
        from memwatch_overlay.connectors.json_file import JsonConnector

        class BrokenConnector(JsonConnector):
            name = "broken"
            description = "fails on read (test plugin)"

            def read(self, *args, **kwargs):
        """) + textwrap.indent(textwrap.dedent(body), " " * 8))
    dist = tmp_path / "mw_broken_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mw-broken-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        f"[{vocab.CONNECTOR_ENTRY_POINTS}]\nbroken = mw_broken_plugin:BrokenConnector\n")
    (tmp_path / "notes.jsonl").write_text('{"id": 1, "text": "works at Google", "created_at": "2026-01-01"}\n')
    (tmp_path / "memwatch.toml").write_text(textwrap.dedent("""
        [overlay]
        path = "overlay.db"

        [[sources]]
        name = "notes"
        connector = "broken"
        path = "notes.jsonl"
        text = "text"
        id = "id"
        created_at = "created_at"
    """))
    return {"PYTHONPATH": str(tmp_path)}


def assert_one_line(proc, code, *needles):
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_a_bug_exits_70_with_one_line_and_traceback_shows_it(tmp_path):
    env = plugin(tmp_path, 'raise ZeroDivisionError("a bug in the connector")')
    proc = run("audit", "--config", "memwatch.toml", "--as-of", AS_OF, cwd=tmp_path, env=env)
    assert_one_line(proc, ExitStatus.INTERNAL_ERROR, "unexpected ZeroDivisionError", "a bug in the connector",
                    "--traceback")
    assert proc.returncode not in (1, 2)
    shown = run("--traceback", "audit", "--config", "memwatch.toml", "--as-of", AS_OF, cwd=tmp_path, env=env)
    assert shown.returncode == 70
    assert "Traceback (most recent call last)" in shown.stderr and "mw_broken_plugin.py" in shown.stderr
    assert shown.stderr.splitlines()[-1].startswith("Error: unexpected ZeroDivisionError")
    by_env = run("audit", "--config", "memwatch.toml", "--as-of", AS_OF, cwd=tmp_path,
                 env={**env, "MEMWATCH_TRACEBACK": "1"})
    assert by_env.returncode == 70 and "Traceback (most recent call last)" in by_env.stderr


def test_a_hostile_value_exhausting_memory_is_an_input_error(tmp_path):
    env = plugin(tmp_path, 'raise MemoryError()')
    proc = run("audit", "--config", "memwatch.toml", "--as-of", AS_OF, cwd=tmp_path, env=env)
    assert_one_line(proc, 2, "out of memory")


def test_a_missing_optional_extra_names_the_extra(tmp_path):
    env = plugin(tmp_path, 'raise ModuleNotFoundError("No module named \'mcp\'", name="mcp")')
    proc = run("audit", "--config", "memwatch.toml", "--as-of", AS_OF, cwd=tmp_path, env=env)
    assert_one_line(proc, 2, "'mcp' extra", "pip install 'memwatch-overlay[mcp]'")


def test_a_missing_module_that_is_no_extra_is_a_bug(tmp_path):
    env = plugin(tmp_path, 'import mw_no_such_module_anywhere\n')
    proc = run("audit", "--config", "memwatch.toml", "--as-of", AS_OF, cwd=tmp_path, env=env)
    assert_one_line(proc, 70, "unexpected ModuleNotFoundError", "mw_no_such_module_anywhere")


def test_an_oserror_on_a_file_written_is_one_line(tmp_path, agent_store):
    store = agent_store("langgraph") / "langgraph_store.sqlite"
    proc = run("init", store, "--output", tmp_path / "no" / "such" / "memwatch.toml", cwd=tmp_path)
    assert_one_line(proc, 2, str(tmp_path / "no" / "such"), "No such file or directory")
    # $GITHUB_STEP_SUMMARY pointing at a file nobody may write (root included)
    proc = run("audit", store, "--as-of", AS_OF, "--format", "json", cwd=tmp_path,
               env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": "/sys/kernel/notes"})
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "Error: /sys/kernel/notes: Permission denied" in proc.stderr.splitlines()


def test_usage_errors_exit_2_not_click_s_1(tmp_path):
    proc = run("audit", "--no-such-flag", cwd=tmp_path)
    assert proc.returncode == 2 and "No such option" in proc.stderr
    proc = run("no-such-command", cwd=tmp_path)
    assert proc.returncode == 2
    assert run("--help", cwd=tmp_path).returncode == 0
    assert run("--version", cwd=tmp_path).returncode == 0


def test_ctrl_c_exits_130(tmp_path):
    marker = tmp_path / "reading"
    env = plugin(tmp_path, f'Path({str(marker)!r}).write_text("x")\ntime.sleep(60)\nreturn iter(())\n')
    # SIGINT as a terminal's Ctrl-C delivers it: a test run started in the background by a
    # shell inherits SIGINT ignored, and Python then (rightly) keeps ignoring it
    proc = subprocess.Popen([EXE, "audit", "--config", "memwatch.toml", "--as-of", AS_OF], cwd=tmp_path,
                            env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "Interrupted." in err


@pytest.mark.parametrize("gate", ["", "--max-stale-ratio=0"])
def test_a_closed_pipe_exits_141_never_the_gate_code(tmp_path, gate):
    """`audit ... | head -c 100` through a real pipe: the reader leaves after 100 bytes."""
    store = make_store(tmp_path / "big.db", n=3000)
    argv = [EXE, "audit", str(store), "--as-of", AS_OF, "--format", "json", *([gate] if gate else [])]
    writer = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    head = subprocess.run(["head", "-c", "100"], stdin=writer.stdout, capture_output=True, timeout=120)
    writer.stdout.close()
    err = writer.stderr.read().decode()
    writer.wait(timeout=120)
    assert len(head.stdout) == 100 and head.stdout.startswith(b"{")
    assert writer.returncode == ExitStatus.BROKEN_PIPE == 141, err
    assert "Traceback" not in err and "Exception ignored" not in err and "BrokenPipe" not in err


@pytest.mark.parametrize("args", [["audit", "--format", "table"], ["report", "--format", "markdown"],
                                  ["stats"], ["audit", "--format", "sarif", "--max-stale=0"]])
def test_a_pipe_whose_reader_is_gone_exits_141(tmp_path, args):
    """The reader closed its end before the first write (rich's Console would exit 1 here)."""
    store = make_store(tmp_path / "s.db", n=300)
    assert run("audit", store, "--as-of", AS_OF, "--format", "json", cwd=tmp_path).returncode == 0
    read_end, write_end = os.pipe()
    os.close(read_end)
    target = [store] if args[0] == "audit" else []
    try:
        proc = subprocess.run([EXE, *args, *map(str, target)], cwd=tmp_path, stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert proc.returncode == 141, proc.stderr
    assert proc.stderr == "" or "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr


def test_run_guarded_maps_each_kind():
    def raising(exc):
        def fn():
            raise exc
        return fn
    err = io.StringIO()
    assert run_guarded(raising(ConfigError("bad", field="sources[0].table")), stderr=err) == 2
    assert err.getvalue() == "Error: sources[0].table: bad\n"
    err = io.StringIO()
    assert run_guarded(raising(ConfigError("bad").with_hint("try this")), stderr=err) == 2
    assert err.getvalue() == "Error: bad\ntry this\n"
    err = io.StringIO()
    assert run_guarded(raising(KeyboardInterrupt()), stderr=err) == 130 and err.getvalue() == "Interrupted.\n"
    assert run_guarded(raising(SystemExit(1)), stderr=io.StringIO()) == 1     # the gate's own exit
    assert run_guarded(lambda: ExitStatus.GATE_FAILED, stderr=io.StringIO()) == 1
    assert run_guarded(lambda: None, stderr=io.StringIO()) == 0
    err = io.StringIO()
    assert run_guarded(raising(KeyError("x")), stderr=err) == 70
    assert err.getvalue().startswith("Error: unexpected KeyError: 'x'")
    assert expected_message(IsADirectoryError(21, "Is a directory", "out")) == "out: Is a directory"
    assert expected_message(ModuleNotFoundError("x", name="psycopg")).startswith("this needs the optional 'postgres'")
    assert expected_message(ModuleNotFoundError("x", name="yaml")) is None
    assert expected_message(ValueError("x")) is None


def test_traceback_switch_is_a_group_option():
    assert wants_traceback(["--traceback", "audit", "x"], environ={})
    assert not wants_traceback(["check", "--traceback"], environ={})     # TEXT of check, not the switch
    assert wants_traceback(["audit"], environ={"MEMWATCH_TRACEBACK": "1"})
