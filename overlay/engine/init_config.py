"""`init`: write a commented memwatch.toml for the store TARGET holds.

The written file reproduces the zero-config audit of TARGET when passed as --config:
the same source name, connector, preset and mapping, and only defaults elsewhere
(thresholds, categories and the CI gate appear as comments to edit). A DSN password
is never written: libpq reads it from PGPASSWORD or ~/.pgpass, or name an
environment variable holding the whole DSN with `dsn_env`.
"""
from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from memwatch_overlay.connectors.folders import folder_source_name, is_store_folder, scan_folder
from memwatch_overlay.connectors.recognize import (
    GENERIC_PRESETS,
    Detection,
    detect,
    source_from_detection,
)
from memwatch_overlay.rules.config import MAPPING_KEYS, SourceConfig, load_config
from memwatch_overlay.core.errors import ConfigError
from memwatch_overlay.core.redact import redact_dsn
from memwatch_overlay.overlay.engine.scoring import DEFAULT_HALF_LIVES, Thresholds

DEFAULT_OUTPUT = "memwatch.toml"
_URL_PASSWORD = re.compile(r"^(?P<head>[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]*):[^@\s]*@")
_KV_PASSWORD = re.compile(r"\s*\bpassword\s*=\s*('[^']*'|\S+)", re.IGNORECASE)


@dataclass
class InitResult:
    path: Path
    detection: Detection
    source: SourceConfig
    password_dropped: bool
    sources: list[SourceConfig] = field(default_factory=list)   # every source written (a folder: several)


def strip_password(dsn: str) -> tuple[str, bool]:
    """The DSN without its password, and whether there was one."""
    out = _URL_PASSWORD.sub(lambda m: m["head"] + "@", dsn)
    out = _KV_PASSWORD.sub("", out)
    return out.strip(), out != dsn


from memwatch_overlay.core.tomltext import toml_value  # noqa: E402  (one escaping helper; kept importable here)


def init_config(target: str, output: str | os.PathLike = DEFAULT_OUTPUT, force: bool = False,
                name: str | None = None) -> InitResult:
    """Detect TARGET's store and write memwatch.toml for it; returns what was written.

    Example:
        result = init_config("memory.jsonl", "memwatch.toml")
        print(result.source.preset)   # "mcp-memory"
    """
    from memwatch_overlay.overlay.engine.audit import _zero_config_name
    out = Path(output)
    if out.exists() and not force:
        raise ConfigError(f"{out} already exists; pass --force to overwrite it", field="--output")
    if out.is_dir():
        raise ConfigError(f"{out} is a directory; give a file name", field="--output")
    if not target.startswith(("postgresql://", "postgres://")) and is_store_folder(Path(target)):
        found = [(det, source) for det, source in _folder_sources(Path(target))]
        det, source = found[0]
    else:
        det = detect(target)
        source = source_from_detection(det, name=name or _zero_config_name(target, None, det))
        found = [(det, source)]
    text, dropped = render_configs(found, out.resolve().parent)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    try:
        load_config(tmp)        # never leave a file behind that the tool itself rejects
    except Exception:
        tmp.unlink()
        raise
    os.replace(tmp, out)
    return InitResult(out, det, source, dropped, [src for _, src in found])


def _folder_sources(folder: Path) -> list[tuple[Detection, SourceConfig]]:
    scan = scan_folder(folder)
    if not scan.stores:
        seen = "; ".join(f"{p.relative_to(folder)} ({why})" for p, why in scan.skipped[:8]) or "no store files"
        raise ConfigError(f"{folder}: no known agent store in this folder (saw: {seen})", field="TARGET")
    return [(det, source_from_detection(det, name=folder_source_name(det.matches[0].preset, folder, path)))
            for path, det in scan.stores]


def _where_line(det: Detection, source: SourceConfig, base: Path) -> tuple[str, bool]:
    if det.kind == "postgres":
        dsn, dropped = strip_password(det.target)
        return f"dsn = {toml_value(dsn)}", dropped
    path = Path(source.path).resolve()
    try:
        shown = str(path.relative_to(base))
    except ValueError:
        shown = str(path)
    return f"path = {toml_value(shown)}", False


def _mapping_lines(source: SourceConfig, keys: dict) -> list[str]:
    lines = []
    for key, value in keys.items():
        if value in (None, [], ""):
            continue
        lines.append(f"{key} = {toml_value(value)}")
    return lines


def _source_keys(source: SourceConfig) -> dict:
    keys = {"table": source.table, "query": source.query, "records": source.records, "id": source.id}
    keys.update({k: getattr(source, k) for k in MAPPING_KEYS})
    return keys


def render_config(det: Detection, source: SourceConfig, base: Path) -> tuple[str, bool]:
    """The memwatch.toml text for a detection, paths relative to `base`."""
    return render_configs([(det, source)], base)


def render_configs(found: list[tuple[Detection, SourceConfig]], base: Path) -> tuple[str, bool]:
    """The memwatch.toml text for one or more detected stores (a folder gives several)."""
    lines = _header_lines(found)
    dropped = False
    for det, source in found:
        block, gone = _source_lines(det, source, base)
        lines += block
        dropped = dropped or gone
    lines += _footer_lines()
    return "\n".join(lines), dropped


def _header_lines(found: list[tuple[Detection, SourceConfig]]) -> list[str]:
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    t = Thresholds()
    lines = [f"# memwatch.toml written by `memwatch-overlay init` on {now} for"]
    for det, _ in found:
        best = det.matches[0]
        lines += [f"#   {redact_dsn(det.target)}",
                  f"#   recognised as {best.preset} (score {best.score:.2f}): {'; '.join(best.reasons)}."]
    lines += [
        "# Use it with: memwatch-overlay audit --config memwatch.toml",
        "# Every section below except [[sources]] is optional; commented lines show the defaults.",
        "",
        "[overlay]",
        "# memwatch's own database (scores, cursors, contradictions), never inside the store.",
        "# Relative paths are relative to this file's folder.",
        '# path = ".memwatch/overlay.db"',
        "",
        "# Freshness thresholds: fresh >= fresh, aging >= aging, stale >= stale, else expired.",
        "# [scoring]",
        f"# fresh = {t.fresh}",
        f"# aging = {t.aging}",
        f"# stale = {t.stale}",
        "",
        "# Half-life in days per category (the score halves every half-life); add",
        "# ttl_days = N to expire a category's facts N days after they were learned.",
    ]
    for cat, days in DEFAULT_HALF_LIVES.items():
        lines.append(f"# [categories.{cat}]")
        lines.append(f"# half_life_days = {days}")
    return lines


def _source_lines(det: Detection, source: SourceConfig, base: Path) -> tuple[list[str], bool]:
    best = det.matches[0]
    where, dropped = _where_line(det, source, base)
    lines = ["", "[[sources]]",
             "# Facts are reported as <name>:<table>:<primary key>.",
             f"name = {toml_value(source.name)}",
             f"connector = {toml_value(source.connector)}"]
    lines.append(where)
    if dropped:
        lines.append("# The DSN's password is not written here: libpq reads PGPASSWORD or ~/.pgpass,")
        lines.append('# or put the whole DSN in an environment variable and use dsn_env = "VAR" instead of dsn.')
    keys = _source_keys(source)
    if source.preset:
        from memwatch_overlay.connectors.registry import preset_class
        lines.append(f"preset = {toml_value(source.preset)}")
        if getattr(preset_class(source.preset, kind=source.connector), "fixed_mapping", False):
            lines.append("# The preset reads this store's fixed layout (see docs); it maps, in effect:")
        else:
            lines.append("# The preset maps the store; set any of these keys to override it:")
        lines += ["# " + ln for ln in _mapping_lines(source, dict(best.defaults) or keys)]
    else:
        lines.append(f"# Mapping found by the {best.preset} heuristics; check it:")
        lines += _mapping_lines(source, keys)
    if det.kind == "json":
        lines.append("# Mapping keys: text, key, subject, created_at, updated_at, accessed_at, access_count,")
        lines.append("# category, expires_at; paths relative to each record (docs/json-sources.md).")
    else:
        lines.append("# Also: where = \"…\" (SQL filter), accessed_at, access_count, category, expires_at.")
    others = [m for m in det.matches[1:]]
    if others:
        lines += ["", "# Other stores recognised in the same target (uncomment to watch them too;",
                  "# give each its own name):"]
        for m in others:
            lines += ["# [[sources]]", f"# name = {toml_value(m.preset)}",
                      f"# connector = {toml_value(det.kind)}", "# " + where]
            if m.preset not in GENERIC_PRESETS:
                lines.append(f"# preset = {toml_value(m.preset)}")
            lines += ["# " + ln for ln in _mapping_lines(source, m.defaults)]
            lines.append(f"#   ({'; '.join(m.reasons)})")
    return lines, dropped


def _footer_lines() -> list[str]:
    return [
        "",
        "# Category rules run before the built-in pack; first match wins.",
        "# [[rules]]",
        '# category = "employment"',
        '# key = ["employer", "company", "job*"]',
        "# text = ['\\b(works?|working|employed) (at|for)\\b']",
        "",
        "# Write-back: only `memwatch-overlay plan --apply` executes these.",
        "# [[actions]]",
        '# when = "expired"',
        '# do = "annotate"',
        "",
        "# CI gate for `audit` (exit 1 when exceeded).",
        "# [ci]",
        "# max_stale_ratio = 0.10",
        "# max_contradictions = 0",
        "",
    ]
