"""mypy over the import package, through a link tree of the package-dir mapping.

pyproject.toml maps the repository's folders (overlay/, connectors/, rules/) onto
`memwatch_overlay.overlay`, `.connectors`, `.rules`. An editable install serves that
mapping through an import hook, which mypy (and most editors) cannot follow, so
`mypy -p memwatch_overlay.overlay.store` finds nothing. This builds build/typecheck/, a
tree of symlinks laid out as the installed package is, runs mypy there, and prints the
errors with the repository's own paths (overlay/store/database.py, not the link).

    python tests/typecheck.py                       # the checked packages (CHECKED)
    python tests/typecheck.py memwatch_overlay.overlay.engine   # any others

`make typecheck` runs it; tests/test_typecheck.py keeps CHECKED clean. Editors: point
the analysis path at build/typecheck (e.g. VS Code "python.analysis.extraPaths") after
one run, or install with `pip install -e . --config-settings editable_mode=strict`.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "build" / "typecheck"
# Packages kept mypy-clean (tests/test_typecheck.py); add one once it passes.
CHECKED = ("memwatch_overlay.core", "memwatch_overlay.overlay.store", "memwatch_overlay.overlay.cli")


def package_dirs() -> dict[str, Path]:
    """{"memwatch_overlay.overlay": ROOT/"overlay", ...} from pyproject.toml."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return {name: ROOT / folder for name, folder in config["tool"]["setuptools"]["package-dir"].items()}


def build_tree() -> Path:
    """build/typecheck/memwatch_overlay/... as links to the repository's folders (idempotent)."""
    mapping = package_dirs()
    top = next(name for name in mapping if "." not in name)
    package = TREE / top
    package.mkdir(parents=True, exist_ok=True)
    wanted: dict[str, Path] = {child.name: child for child in mapping[top].iterdir()
                               if child.name != "__pycache__"}
    for name, folder in mapping.items():
        if name != top:
            wanted[name.split(".", 1)[1]] = folder
    for entry in package.iterdir():
        if entry.is_symlink() and entry.name not in wanted:
            entry.unlink()
    for name, target in wanted.items():
        link = package / name
        if link.is_symlink() and Path(os.readlink(link)) == target:
            continue
        if link.is_symlink():
            link.unlink()
        link.symlink_to(target, target_is_directory=target.is_dir())
    return TREE


def repo_paths(text: str) -> str:
    """mypy's tree-relative paths turned back into the repository's."""
    for name, folder in sorted(package_dirs().items(), key=lambda kv: -len(kv[0])):
        text = text.replace(name.replace(".", "/") + "/", os.path.relpath(folder, ROOT) + "/")
    return text


def run(packages: tuple[str, ...] = CHECKED) -> subprocess.CompletedProcess:
    tree = build_tree()
    argv = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
            "--cache-dir", str(TREE / ".mypy_cache")]
    for package in packages:
        argv += ["-p", package]
    proc = subprocess.run(argv, cwd=tree, capture_output=True, text=True)
    proc.stdout = repo_paths(proc.stdout)
    return proc


if __name__ == "__main__":
    result = run(tuple(sys.argv[1:]) or CHECKED)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    sys.exit(result.returncode)
