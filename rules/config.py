"""memwatch.toml: defaults in dataclasses, the TOML overlaid on them, then strict validation.

Every error names the offending key (``sources[0].table``, ``rules[2].text[0]``) and the
file, so a user can fix it without reading code. Unknown keys are errors: a typo in a
threshold must not silently leave the gate open.
"""
from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memwatch_overlay.rules import action_values as actionvalues
from memwatch_overlay.rules import sql_functions
from memwatch_overlay.core.errors import ConfigError, RuleError
from memwatch_overlay.core.vocab import (
    ACTION_CONDITIONS,
    ACTION_KINDS,
    BUILTIN_CONNECTORS,
    CONNECTOR_ENTRY_POINTS,
    LOG_FORMATS,
)
from memwatch_overlay.rules.policy import (
    CONFIDENCE_CEILING,
    DEFAULT_HALF_LIVES,
    CategoryPolicy,
    ConfidencePolicy,
    Thresholds,
)

CONNECTORS = BUILTIN_CONNECTORS
LABEL_CONDITIONS = ACTION_CONDITIONS
DEFAULT_OVERLAY_PATH = ".memwatch/overlay.db"
DEFAULT_GC_RETENTION_DAYS = 30.0
# The source name the Python API (MemWatch) uses for facts it stores in the overlay itself.
NATIVE_SOURCE = "memwatch"

# Mapping keys shared by every connector: what a record's fields are called in the source.
MAPPING_KEYS = ("text", "key", "subject", "created_at", "updated_at", "accessed_at",
                "access_count", "category", "expires_at")
SOURCE_KEYS = {
    "name": str, "connector": str, "path": str, "dsn": str, "dsn_env": str, "preset": str,
    "table": str, "query": str, "id": (str, list), "where": str, "records": str,
    "poll_seconds": (int, float), "apply": bool,
    # bounds on one read: a statement's time (Postgres statement_timeout, SQLite progress
    # handler) and a JSONL line's length (longer lines are skipped with a warning)
    "timeout_seconds": (int, float), "max_line_bytes": int,
    # subject_pattern / subject_map: how a raw subject (a session id) becomes the user
    # (connectors/subjects.py); qdrant_path: where mem0's qdrant local storage is (presets/mem0.py)
    "subject_pattern": str, "subject_map": dict, "qdrant_path": str,
    # subject_space: sources naming the same space share subjects (their facts are compared)
    "subject_space": str,
    **{k: str for k in MAPPING_KEYS},
}
CI_LIMITS = {"max_stale_ratio": (int, float), "max_stale": int, "max_contradictions": int,
             "min_avg_freshness": (int, float)}
CI_KEYS = {**CI_LIMITS, "categories": dict, "sources": dict}
CI_FRACTIONS = ("max_stale_ratio", "min_avg_freshness")   # must lie in [0, 1]
# Contradiction detection: [detector] (rules), [embeddings] (semantic layer), [judge] (LLM critic).
DETECTOR_KEYS = {"enabled": bool, "pack": str, "min_confidence": (int, float), "workers": int}
EMBEDDINGS_KEYS = {"enabled": bool, "model": str, "threshold": (int, float), "device": str, "pair_encoder": bool,
                   "pair_encoder_gate": bool, "pair_encoder_threshold": (int, float),
                   "pair_encoder_veto": (int, float)}
JUDGE_KEYS = {"enabled": bool, "url": str, "model": str, "api_key_env": str, "timeout": (int, float),
              "retries": int, "batch_size": int}


# Sane ranges for numbers (NaN and infinities are refused everywhere).
MIN_DAYS, MAX_DAYS = 1e-3, 100_000.0        # a half-life or TTL: 86 s .. ~270 years
MAX_SECONDS = 366 * 86400.0                 # a daemon period or a poll: at most a year
DEFAULT_TIMEOUT_SECONDS = 120.0             # one read statement (see SourceConfig.timeout_seconds)
DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024   # one JSONL line
DEFAULT_MAX_TEXT_CHARS = 10_000             # [limits] max_text_chars: what categorisation and slots read
LIMITS_KEYS = {"max_text_chars": int}


@dataclass
class DaemonConfig:
    """[daemon]: how often the sidecar looks, rescans and retries. Seconds throughout."""

    debounce_seconds: float = 0.2          # quiet time after a file event before a sync
    max_delay_seconds: float = 2.0         # a constant stream of writes still syncs this often
    deletion_scan_seconds: float = 300.0   # key-only pass finding rows deleted in the source
    update_scan_seconds: float = 30.0      # updated_at without an index: scan for updates this often
    rescore_seconds: float = 60.0          # recompute the labels whose time has come
    full_resync_seconds: float = 0.0       # periodic full re-read (0: never; for stores without updated_at)
    backoff_initial_seconds: float = 1.0   # first retry after a source fails
    backoff_max_seconds: float = 300.0     # retries back off exponentially up to this
    error_log_seconds: float = 60.0        # a failing source logs at most once per this
    busy_timeout_seconds: float = 1.0      # how long a read waits on a bot's lock before retrying later
    heartbeat_seconds: float = 15.0        # how often `status` learns the daemon is alive
    log_format: str = "text"               # text | json (overridden by --log-format)


# key -> (minimum, whether the minimum itself is allowed)
DAEMON_KEYS = {
    "debounce_seconds": (0.0, True), "max_delay_seconds": (0.0, False),
    "deletion_scan_seconds": (0.0, False), "update_scan_seconds": (0.0, True), "rescore_seconds": (0.0, False),
    "full_resync_seconds": (0.0, True), "backoff_initial_seconds": (0.0, False),
    "backoff_max_seconds": (0.0, False), "error_log_seconds": (0.0, True),
    "busy_timeout_seconds": (0.0, True), "heartbeat_seconds": (0.0, False),
}


@dataclass
class SourceConfig:
    """One [[sources]] entry. Mapping values are column names or dotted JSON paths."""

    name: str
    connector: str
    path: str | None = None
    dsn: str | None = None
    dsn_env: str | None = None
    preset: str | None = None
    table: str | None = None
    query: str | None = None
    id: list[str] = field(default_factory=list)
    where: str | None = None
    records: str | None = None
    poll_seconds: float = 5.0
    apply: bool = False
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    text: str | None = None
    key: str | None = None
    subject: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    accessed_at: str | None = None
    access_count: str | None = None
    category: str | None = None
    expires_at: str | None = None
    subject_pattern: str | None = None
    subject_map: dict[str, str] = field(default_factory=dict)
    qdrant_path: str | None = None
    subject_space: str | None = None     # sources with the same space share subjects; None: its own
    base_dir: Path = field(default_factory=Path.cwd)

    @property
    def resolved_path(self) -> Path | None:
        """`path` relative to the config file's folder."""
        if self.path is None:
            return None
        p = Path(os.path.expanduser(self.path))
        return p if p.is_absolute() else (self.base_dir / p)

    @property
    def resolved_dsn(self) -> str | None:
        if self.dsn:
            return self.dsn
        if self.dsn_env:
            return os.environ.get(self.dsn_env)
        return None

    @property
    def target(self) -> str:
        """What the source reads, safe to print (no password)."""
        if self.resolved_path is not None:
            return str(self.resolved_path)
        from memwatch_overlay.core.redact import redact_dsn
        return redact_dsn(self.resolved_dsn or f"${self.dsn_env}")


@dataclass
class Rule:
    """One [[rules]] entry: first match wins."""

    category: str
    source: str | None = None
    key: list[str] = field(default_factory=list)          # globs on the record's key
    text: list[re.Pattern] = field(default_factory=list)  # regexes on the record's text


@dataclass
class Action:
    """One [[actions]] entry (write-back planning, overlay/writeback/engine.py).

    `do`: annotate (recorded in the overlay only), set (columns the source already has),
    delete (the row), expire (the store's natural expiry, declared by its preset).
    """

    when: str
    do: str
    category: str = "*"
    source: str | None = None
    set: dict[str, Any] = field(default_factory=dict)


@dataclass
class Config:
    path: Path | None = None
    overlay_path: str = DEFAULT_OVERLAY_PATH
    overlay_dsn: str | None = None
    thresholds: Thresholds = field(default_factory=Thresholds)
    categories: dict[str, CategoryPolicy] = field(
        default_factory=lambda: {k: CategoryPolicy(v) for k, v in DEFAULT_HALF_LIVES.items()})
    # a source's category-column value -> the category it means ([categories.X] aliases = [...])
    category_aliases: dict[str, str] = field(default_factory=dict)
    sources: list[SourceConfig] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    ci: dict[str, Any] = field(default_factory=dict)
    lifecycle: ConfidencePolicy = field(default_factory=ConfidencePolicy)
    gc_retention_days: float = DEFAULT_GC_RETENTION_DAYS
    detector: dict[str, Any] = field(default_factory=dict)     # validated [detector]
    embeddings: dict[str, Any] = field(default_factory=dict)   # validated [embeddings]
    judge: dict[str, Any] = field(default_factory=dict)        # validated [judge]
    daemon: DaemonConfig = field(default_factory=DaemonConfig)
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS               # [limits]

    @property
    def base_dir(self) -> Path:
        return self.path.parent if self.path else Path.cwd()

    def resolved_overlay_path(self) -> Path:
        p = Path(os.path.expanduser(self.overlay_path))
        return p if p.is_absolute() else self.base_dir / p

    def policy(self, category: str) -> CategoryPolicy:
        return self.categories.get(category) or self.categories["general"]

    def source(self, name: str) -> SourceConfig:
        for s in self.sources:
            if s.name == name:
                return s
        names = ", ".join(s.name for s in self.sources) or "none"
        raise ConfigError(f"no source named {name!r} (sources: {names})", field="--source")



def known_connectors() -> tuple[str, ...]:
    """Connector kinds a source may name: the built-ins, then plugins registered in the
    entry-point group (names only; a plugin is imported when a source uses it)."""
    from importlib.metadata import entry_points
    plugins = sorted({ep.name for ep in entry_points(group=CONNECTOR_ENTRY_POINTS)} - set(BUILTIN_CONNECTORS))
    return BUILTIN_CONNECTORS + tuple(plugins)

def load_config(path: str | os.PathLike) -> Config:
    """Read and validate a memwatch.toml file."""
    p = Path(path)
    try:
        raw = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError("config file not found", path=str(p)) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML: {exc}", path=str(p)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config: {exc}", path=str(p)) from None
    return parse_config(raw, path=p.resolve())


def parse_config(raw: dict, path: Path | None = None) -> Config:
    """Validate a TOML document already parsed into a dict."""
    v = _Validator(str(path) if path else None)
    v.known(raw, "", {"overlay", "scoring", "categories", "sources", "rules", "actions", "ci",
                      "detector", "embeddings", "judge", "daemon", "lifecycle", "limits"})
    cfg = Config(path=path)

    overlay = v.table(raw, "overlay")
    v.known(overlay, "overlay", {"path", "dsn"})
    cfg.overlay_path = v.typed(overlay, "overlay", "path", str, cfg.overlay_path)
    cfg.overlay_dsn = v.typed(overlay, "overlay", "dsn", str, None)

    scoring = v.table(raw, "scoring")
    v.known(scoring, "scoring", {"fresh", "aging", "stale"})
    t = Thresholds(**{k: float(v.number(scoring, "scoring", k, getattr(Thresholds(), k), 0.0, 1.0))
                      for k in ("fresh", "aging", "stale")})
    if not (1 >= t.fresh > t.aging > t.stale > 0):
        v.fail("scoring", "thresholds must satisfy 1 >= fresh > aging > stale > 0")
    cfg.thresholds = t

    for name, body in v.table(raw, "categories").items():
        where = f"categories.{name}"
        if not isinstance(body, dict):
            v.fail(where, "must be a table")
        v.known(body, where, {"half_life_days", "ttl_days", "aliases"})
        for alias in _str_list(v, body, where, "aliases"):
            if alias.strip().lower() in cfg.category_aliases:
                v.fail(f"{where}.aliases", f"{alias!r} already maps to {cfg.category_aliases[alias.strip().lower()]!r}")
            cfg.category_aliases[alias.strip().lower()] = name
        default = DEFAULT_HALF_LIVES.get(name, DEFAULT_HALF_LIVES["general"])
        half = v.number(body, where, "half_life_days", default)
        ttl = v.number(body, where, "ttl_days", None)
        if half <= 0:
            v.fail(f"{where}.half_life_days", "must be > 0")
        if ttl is not None and ttl <= 0:
            v.fail(f"{where}.ttl_days", "must be > 0")
        v.number(body, where, "half_life_days", default, MIN_DAYS, MAX_DAYS)
        v.number(body, where, "ttl_days", None, MIN_DAYS, MAX_DAYS)
        cfg.categories[name] = CategoryPolicy(float(half), None if ttl is None else float(ttl))

    cfg.lifecycle, cfg.gc_retention_days = _parse_lifecycle(v, v.table(raw, "lifecycle"))

    cfg.sources = [_parse_source(v, body, i, cfg.base_dir) for i, body in enumerate(v.array(raw, "sources"))]
    seen = set()
    for i, s in enumerate(cfg.sources):
        if s.name == NATIVE_SOURCE:
            v.fail(f"sources[{i}].name", f"{NATIVE_SOURCE!r} is reserved for facts added through the Python API")
        if s.name in seen:
            v.fail(f"sources[{i}].name", f"duplicate source name {s.name!r}")
        seen.add(s.name)

    cfg.rules = [_parse_rule(v, body, i) for i, body in enumerate(v.array(raw, "rules"))]
    cfg.actions = [_parse_action(v, body, i) for i, body in enumerate(v.array(raw, "actions"))]
    for i, a in enumerate(cfg.actions):
        if a.source is not None and a.source not in seen:
            v.fail(f"actions[{i}].source", f"no source named {a.source!r}")

    cfg.ci = _parse_ci(v, v.table(raw, "ci"), cfg)
    for section, keys in (("detector", DETECTOR_KEYS), ("embeddings", EMBEDDINGS_KEYS),
                          ("judge", JUDGE_KEYS)):
        body = v.table(raw, section)
        v.known(body, section, set(keys))
        for key, kind in keys.items():
            v.typed(body, section, key, kind, None)
        for key in ("min_confidence", "threshold", "pair_encoder_threshold", "pair_encoder_veto"):
            v.number(body, section, key, None, 0.0, 1.0)
        v.number(body, section, "timeout", None, 0.001, 3600.0)
        v.number(body, section, "retries", None, 0, 20)
        v.number(body, section, "batch_size", None, 1, 1000)
        v.number(body, section, "workers", None, 1, 64)
        setattr(cfg, section, dict(body))
    if cfg.judge.get("enabled", True) and cfg.judge and "url" not in cfg.judge:
        v.fail("judge.url", "is required to use a judge (an OpenAI-compatible base URL)")
    key_env = cfg.judge.get("api_key_env")
    if cfg.judge.get("enabled", True) and key_env and not os.environ.get(key_env):
        v.fail("judge.api_key_env", f"environment variable {key_env} is not set (it should hold the judge's "
                                    "API key; set it, or remove api_key_env for a server without keys)")
    limits = v.table(raw, "limits")
    v.known(limits, "limits", set(LIMITS_KEYS))
    cfg.max_text_chars = int(v.number(limits, "limits", "max_text_chars", DEFAULT_MAX_TEXT_CHARS, 100, 2**31))
    cfg.daemon = _parse_daemon(v, v.table(raw, "daemon"))
    return cfg


def _parse_lifecycle(v: "_Validator", body: dict) -> tuple[ConfidencePolicy, float]:
    """[lifecycle]: confidence erosion (see overlay.engine.scoring) and the gc retention period."""
    v.known(body, "lifecycle", {"confidence_half_life_days", "confidence_floor", "confidence_initial",
                                "gc_retention_days"})
    d = ConfidencePolicy()
    half = v.number(body, "lifecycle", "confidence_half_life_days", d.half_life_days)
    if half <= 0:
        v.fail("lifecycle.confidence_half_life_days", "must be > 0")
    v.number(body, "lifecycle", "confidence_half_life_days", d.half_life_days, MIN_DAYS, MAX_DAYS)
    floor = v.number(body, "lifecycle", "confidence_floor", d.floor)
    initial = v.number(body, "lifecycle", "confidence_initial", d.initial)
    retention = v.number(body, "lifecycle", "gc_retention_days", DEFAULT_GC_RETENTION_DAYS, 0.0, MAX_DAYS)
    if not 0 <= floor < CONFIDENCE_CEILING:
        v.fail("lifecycle.confidence_floor", f"must be >= 0 and < {CONFIDENCE_CEILING}")
    if not floor <= initial <= CONFIDENCE_CEILING:
        v.fail("lifecycle.confidence_initial", f"must be between confidence_floor and {CONFIDENCE_CEILING}")
    if retention < 0:
        v.fail("lifecycle.gc_retention_days", "must be >= 0")
    return ConfidencePolicy(float(half), float(floor), float(initial)), float(retention)


def _parse_ci(v: "_Validator", ci: dict, cfg: Config) -> dict:
    """[ci] limits, plus [ci.categories.NAME] / [ci.sources.NAME] tables of the same limits.

    A scoped table must name a known category (default, [categories.*] or a rule's) or,
    when the config lists [[sources]], one of them: a typo must not leave a gate open.
    """
    v.known(ci, "ci", set(CI_KEYS))
    _check_limits(v, ci, "ci")
    categories = set(cfg.categories) | {r.category for r in cfg.rules}
    sources = {s.name for s in cfg.sources}
    for table, word, known in (("categories", "category", categories), ("sources", "source", sources)):
        named = v.typed(ci, "ci", table, dict, {})
        for name, body in named.items():
            where = f"ci.{table}.{name}"
            if not isinstance(body, dict):
                v.fail(where, "must be a table of limits")
            v.known(body, where, set(CI_LIMITS))
            _check_limits(v, body, where)
            if known and name not in known:
                v.fail(where, f"no {word} named {name!r} (known: {', '.join(sorted(known))})")
    return dict(ci)


def _check_limits(v: "_Validator", table: dict, where: str) -> None:
    for key, kind in CI_LIMITS.items():
        value = v.typed(table, where, key, kind, None)
        if isinstance(value, float) and not math.isfinite(value):
            v.fail(f"{where}.{key}", f"must be a finite number, not {value!r}")
        if value is None:
            continue
        if key in CI_FRACTIONS and not 0 <= value <= 1:
            v.fail(f"{where}.{key}", f"must be between 0 and 1, not {value!r}")
        if value < 0:
            v.fail(f"{where}.{key}", f"must be >= 0, not {value!r}")


def _parse_daemon(v: "_Validator", body: dict) -> DaemonConfig:
    v.known(body, "daemon", set(DAEMON_KEYS) | {"log_format"})
    values: dict[str, Any] = {}
    for key, (minimum, inclusive) in DAEMON_KEYS.items():
        value = v.number(body, "daemon", key, None)
        if value is None:
            continue
        if value < minimum or (value == minimum and not inclusive):
            v.fail(f"daemon.{key}", f"must be {'>=' if inclusive else '>'} {minimum:g}, not {value!r}")
        v.number(body, "daemon", key, None, minimum, MAX_SECONDS)
        if 0 < value < 1e-3:
            v.fail(f"daemon.{key}", f"must be 0 or at least 0.001 s, not {value!r}")
        values[key] = float(value)
    fmt = v.typed(body, "daemon", "log_format", str, None)
    if fmt is not None:
        if fmt not in LOG_FORMATS:
            v.fail("daemon.log_format", f"must be one of {', '.join(LOG_FORMATS)}, not {fmt!r}")
        values["log_format"] = fmt
    cfg = DaemonConfig(**values)
    if cfg.backoff_max_seconds < cfg.backoff_initial_seconds:
        v.fail("daemon.backoff_max_seconds", "must be >= daemon.backoff_initial_seconds")
    if cfg.max_delay_seconds < cfg.debounce_seconds:
        v.fail("daemon.max_delay_seconds", "must be >= daemon.debounce_seconds")
    return cfg


def _parse_source(v: "_Validator", body: Any, i: int, base_dir: Path) -> SourceConfig:
    where = f"sources[{i}]"
    if not isinstance(body, dict):
        v.fail(where, "must be a table")
    v.known(body, where, set(SOURCE_KEYS))
    for key, kind in SOURCE_KEYS.items():
        v.typed(body, where, key, kind, None)
    for key in ("name", "connector"):
        if key not in body:
            v.fail(f"{where}.{key}", "is required")
    if body["connector"] not in known_connectors():
        v.fail(f"{where}.connector", f"must be one of {', '.join(known_connectors())}, not {body['connector']!r}")
    if body["connector"] == "postgres":
        if not (body.get("dsn") or body.get("dsn_env")):
            v.fail(f"{where}.dsn", "is required for a postgres source (or dsn_env)")
    elif body["connector"] in BUILTIN_CONNECTORS:
        if "path" not in body:
            v.fail(f"{where}.path", f"is required for a {body['connector']} source")
    elif not (body.get("path") or body.get("dsn") or body.get("dsn_env")):
        v.fail(f"{where}.path", f"a {body['connector']} source needs a path or a dsn")
    if "table" in body and "query" in body:
        v.fail(f"{where}.query", "give either table or query, not both")
    if body["connector"] == "postgres":
        for key in ("where", "query"):
            if body.get(key):
                problem = sql_functions.check_postgres_sql(body[key], key)
                if problem:
                    v.fail(f"{where}.{key}", problem)
    ids = body.get("id", [])
    ids = [ids] if isinstance(ids, str) else ids
    if not all(isinstance(x, str) and x for x in ids):
        v.fail(f"{where}.id", "must be a column name or a list of column names")
    values = {k: body[k] for k in body if k != "id"}
    if ":" in body["name"] or not body["name"].strip():
        v.fail(f"{where}.name", f"{body['name']!r}: a source name must be non-empty and must not contain ':' "
                                "(it separates the parts of a fact's ref, source:table:id)")
    if "poll_seconds" in values and values["poll_seconds"] <= 0:
        v.fail(f"{where}.poll_seconds", "must be > 0")
    v.number(body, where, "poll_seconds", None, 0.01, MAX_SECONDS)
    v.number(body, where, "timeout_seconds", None, 0.01, 7 * 86400.0)
    v.number(body, where, "max_line_bytes", None, 1024, 2**31)
    if "subject_pattern" in values:
        try:
            re.compile(values["subject_pattern"])
        except re.error as exc:
            v.fail(f"{where}.subject_pattern", f"invalid regex {values['subject_pattern']!r}: {exc}")
        _refuse_catastrophic(v, values["subject_pattern"], f"{where}.subject_pattern")
    for raw, subject in values.get("subject_map", {}).items():
        if not isinstance(subject, str) or not subject:
            v.fail(f"{where}.subject_map.{raw}", f"must be a subject (a non-empty string), not {subject!r}")
    return SourceConfig(id=list(ids), base_dir=base_dir, **values)


def _parse_rule(v: "_Validator", body: Any, i: int) -> Rule:
    where = f"rules[{i}]"
    if not isinstance(body, dict):
        v.fail(where, "must be a table")
    v.known(body, where, {"category", "source", "key", "text"})
    category = v.typed(body, where, "category", str, None)
    if not category:
        raise RuleError("is required", field=f"{where}.category", path=v.path)
    keys = _str_list(v, body, where, "key")
    patterns = []
    for j, pattern in enumerate(_str_list(v, body, where, "text")):
        try:
            patterns.append(re.compile(pattern, re.IGNORECASE))
        except re.error as exc:
            raise RuleError(f"invalid regex {pattern!r}: {exc}", field=f"{where}.text[{j}]", path=v.path) from None
        _refuse_catastrophic(v, pattern, f"{where}.text[{j}]")
    return Rule(category=category, source=v.typed(body, where, "source", str, None), key=keys, text=patterns)


def _parse_action(v: "_Validator", body: Any, i: int) -> Action:
    where = f"actions[{i}]"
    if not isinstance(body, dict):
        v.fail(where, "must be a table")
    v.known(body, where, {"when", "category", "do", "set", "source"})
    when = v.typed(body, where, "when", str, None)
    if when not in LABEL_CONDITIONS:
        raise RuleError(f"must be one of {', '.join(LABEL_CONDITIONS)}", field=f"{where}.when", path=v.path)
    do = v.typed(body, where, "do", str, None)
    if do not in ACTION_KINDS:
        raise RuleError(f"must be one of {', '.join(ACTION_KINDS)}", field=f"{where}.do", path=v.path)
    sets = v.typed(body, where, "set", dict, {})
    if do == "set" and not sets:
        raise RuleError("do = \"set\" needs a set = { column = value } table", field=f"{where}.set", path=v.path)
    if do in ("delete", "expire") and sets:
        raise RuleError(f"do = \"{do}\" takes no set table (use do = \"set\" to choose columns)",
                        field=f"{where}.set", path=v.path)
    for col, value in sets.items():
        problem = actionvalues.check(value)
        if problem:
            raise RuleError(problem, field=f"{where}.set.{col}", path=v.path)
    return Action(when=when, do=do, category=v.typed(body, where, "category", str, "*"),
                  source=v.typed(body, where, "source", str, None), set=dict(sets))


def _refuse_catastrophic(v: "_Validator", pattern: str, key: str) -> None:
    """RuleError for a regex whose backtracking can take exponential time (rules/regexset.py)."""
    from memwatch_overlay.rules.regexset import nested_quantifier
    problem = nested_quantifier(pattern)
    if problem:
        raise RuleError(f"regex {pattern!r} has {problem}, which can take exponential time on a text that "
                        "almost matches; use one repeat (a+ rather than (a+)+) or bound the inner one "
                        "(a{1,20})", field=key, path=v.path)


def _str_list(v: "_Validator", body: dict, where: str, key: str) -> list[str]:
    value = body.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        v.fail(f"{where}.{key}", "must be a string or a list of strings")
    return value


class _Validator:
    """Small helpers that raise ConfigError naming the file and the key."""

    def __init__(self, path: str | None):
        self.path = path

    def fail(self, field_name: str, message: str):
        raise ConfigError(message, field=field_name, path=self.path)

    def known(self, table: dict, where: str, allowed: set[str]):
        for key in table:
            if key not in allowed:
                name = f"{where}.{key}" if where else key
                self.fail(name, f"unknown key (expected one of: {', '.join(sorted(allowed))})")

    def table(self, raw: dict, key: str) -> dict:
        value = raw.get(key, {})
        if not isinstance(value, dict):
            self.fail(key, "must be a table")
        return value

    def array(self, raw: dict, key: str) -> list:
        value = raw.get(key, [])
        if not isinstance(value, list):
            self.fail(key, f"must be an array of tables ([[{key}]])")
        return value

    def number(self, table: dict, where: str, key: str, default, lo: float | None = None,
               hi: float | None = None):
        """A finite int or float within [lo, hi] (NaN, infinities, denormals out of range fail)."""
        value = self.typed(table, where, key, (int, float), default)
        if key not in table:
            return value
        name = f"{where}.{key}" if where else key
        if isinstance(value, float) and not math.isfinite(value):
            self.fail(name, f"must be a finite number, not {value!r}")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            low = "-inf" if lo is None else f"{lo:g}"
            high = "inf" if hi is None else f"{hi:g}"
            self.fail(name, f"must be between {low} and {high}, not {value!r}")
        return value

    def typed(self, table: dict, where: str, key: str, kind, default):
        if key not in table:
            return default
        value = table[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if isinstance(value, bool) and bool not in kinds:
            ok = False
        else:
            ok = isinstance(value, kinds)
        if not ok:
            names = " or ".join(_TYPE_NAMES.get(k, k.__name__) for k in kinds)
            self.fail(f"{where}.{key}" if where else key, f"must be {names}, not {value!r}")
        return value


_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
               list: "a list", dict: "a table"}

