"""mypy is clean on the packages tests/typecheck.py checks (core, the overlay store, the CLI)."""
import typecheck


def test_the_link_tree_mirrors_the_package_dir_mapping():
    tree = typecheck.build_tree() / "memwatch_overlay"
    assert (tree / "overlay" / "store" / "database.py").resolve() == typecheck.ROOT / "overlay" / "store" / "database.py"
    assert (tree / "core" / "errors.py").resolve() == typecheck.ROOT / "memwatch_overlay" / "core" / "errors.py"
    assert (tree / "rules" / "config.py").is_file() and (tree / "connectors" / "sqlite.py").is_file()


def test_mypy_is_clean_on_the_checked_packages():
    proc = typecheck.run()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Success: no issues found" in proc.stdout


def test_errors_are_reported_with_repository_paths():
    text = "memwatch_overlay/overlay/store/database.py:3: error: x\nmemwatch_overlay/core/vocab.py:1: error: y"
    assert typecheck.repo_paths(text) == "overlay/store/database.py:3: error: x\nmemwatch_overlay/core/vocab.py:1: error: y"
