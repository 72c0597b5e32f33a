"""The `memwatch-overlay` command line: click parsing and rendering only (`main.main` is the entry point)."""
