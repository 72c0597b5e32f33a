"""A new user's first commands, through the installed console script: no overlay yet,
memwatch's `refresh` and compact report, the declared Python and licence metadata."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from storegen import EXE, run

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("command", [["status"], ["report"], ["report", "--format", "json"], ["stats"],
                                     ["report", "--compact"], ["refresh"]])
def test_reading_commands_without_an_overlay_say_so_and_create_nothing(tmp_path, command):
    proc = run(*command, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith("Error: --overlay: no overlay at ") and "memwatch-overlay audit" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stdout == ""
    assert list(tmp_path.iterdir()) == []              # no .memwatch/ made


def test_refresh_without_refs_rescores_everything_and_compact_report(tmp_path):
    db = tmp_path / "m.db"
    assert run("add", "employer", "Google", "--category", "employment", "--overlay", db, cwd=tmp_path).returncode == 0
    assert run("add", "city", "Jakarta", "--overlay", db, cwd=tmp_path).returncode == 0
    later = "2028-06-01"
    proc = run("refresh", "--overlay", db, "--as-of", later, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == "rescored 2 fact(s)"
    # scores were recomputed at --as-of, nothing was re-confirmed (that is `refresh KEY`)
    data = json.loads(run("report", "--overlay", db, "--format", "json", "--as-of", later, cwd=tmp_path).stdout)
    assert {f["key"]: f["label"] for f in data["facts"]} == {"employer": "expired", "city": "stale"}
    proc = run("report", "--compact", "--overlay", db, "--as-of", later, cwd=tmp_path, COLUMNS="80")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    header = next(ln for ln in lines if "KEY" in ln)
    assert [h.strip() for h in header.strip("┃ ").split("┃")] == ["KEY", "VALUE", "SCORE", "LABEL", "DAYS LEFT"]
    employer = next(ln for ln in lines if "employer" in ln)
    assert "Google" in employer and "expired" in employer
    assert run("report", "--compact", "--format", "json", "--overlay", db, cwd=tmp_path).returncode == 2


def test_declared_python_license_and_the_console_script():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert meta["requires-python"] == ">=3.11"            # tomllib is imported unconditionally
    assert meta["license"] == "MIT" and (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert sys.version_info >= (3, 11)
    proc = subprocess.run([EXE, "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "memwatch-overlay" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "memwatch_overlay", "--version"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and proc.stdout == subprocess.run([EXE, "--version"], capture_output=True,
                                                                  text=True).stdout


@pytest.mark.slow
def test_a_fresh_install_on_the_declared_minimum_python(tmp_path):
    """pip-installs the checkout (not editable) into a new venv of python3.11 and runs the script there.

    The dependencies come from this environment (a .pth line), so the test needs no network;
    what it proves is the package's own metadata, files and imports on the minimum Python.
    """
    minimum = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"].removeprefix(">=")
    import shutil
    interpreter = shutil.which(f"python{minimum}")
    if interpreter is None and f"{sys.version_info[0]}.{sys.version_info[1]}" == minimum:
        interpreter = sys.executable
    assert interpreter, f"python{minimum} is not installed"
    venv = tmp_path / "venv"
    subprocess.run([interpreter, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = next((venv / "lib").glob("python*/site-packages"))
    import site as site_mod
    ours = [p for p in site_mod.getsitepackages() if Path(p).is_dir()]
    (site / "zz_deps.pth").write_text("\n".join(ours) + "\n")
    py = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    # the build backend of this environment when it is new enough for pyproject's
    # [build-system] (an SPDX licence string needs setuptools >= 77), else pip's isolated build
    import setuptools
    isolation = [] if int(setuptools.__version__.split(".")[0]) < 77 else ["--no-build-isolation"]
    proc = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", *isolation,
                           "--prefix", str(venv), str(ROOT)], capture_output=True, text=True, env=env,
                          timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "License classifiers are deprecated" not in proc.stderr and "project.license" not in proc.stderr
    script = venv / "bin" / "memwatch-overlay"
    out = subprocess.run([str(script), "--version"], capture_output=True, text=True, env=env, timeout=60,
                         cwd=tmp_path)
    assert out.returncode == 0 and "memwatch-overlay" in out.stdout, out.stderr
    # it runs from the fresh install, not from the checkout
    where = subprocess.run([str(py), "-c", "import memwatch_overlay; print(memwatch_overlay.__file__)"],
                           capture_output=True, text=True, env=env, cwd=tmp_path).stdout
    assert str(venv) in where


@pytest.mark.slow
def test_make_demo_shows_the_headline_check_and_names_the_html_report(tmp_path):
    venv = Path(sys.executable).parents[1]
    report = tmp_path / "demo.html"
    # -o: take the venv as installed (this one), do not reinstall
    proc = subprocess.run(["make", "-s", "-C", str(ROOT), "demo", f"VENV={venv}", f"DEMO_REPORT={report}",
                           "-o", f"{venv}/.core"], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "COLUMNS": "100"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "== check: what the user just said" in out
    assert "contradiction(s) detected." in out and "UPDATE" in out
    assert f"open {report}" in out and report.read_text().startswith("<!DOCTYPE html>")
