"""`audit`: sync the chosen sources into the overlay at `--as-of`, then judge the result.

The result is streamed: the summary comes from one SQL aggregate, the facts from a
cursor over the overlay, so a million-fact audit never holds its facts in memory.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import time
from functools import partial
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from memwatch_overlay.connectors.folders import folder_source_name, is_store_folder, scan_folder
from memwatch_overlay.connectors.base import TableInfo
from memwatch_overlay.connectors.recognize import GENERIC_PRESETS, detect, source_from_detection
from memwatch_overlay.rules.config import Config, SourceConfig
from memwatch_overlay.overlay.engine import gate
from memwatch_overlay.core import fastjson as jsontext
from memwatch_overlay.core.errors import ConfigError
from memwatch_overlay.core.redact import redact_dsn
from memwatch_overlay.overlay.store.database import OverlayStore, ReportRow
from memwatch_overlay.overlay.engine.sync import SyncEngine, SyncStats
from memwatch_overlay.core.timeparse import to_iso
from memwatch_overlay.core.version import __version__

REPORT_VERSION = 1


def _sync_progress(on_progress: Callable, source: str, n: int, phase: str | None = None,
                   of: int | None = None) -> None:
    """A sync's progress(n, phase, of) as audit()'s on_progress(source, n, ...); `of` only
    when the sync gives it (the detection's count)."""
    if of is None:
        on_progress(source, n, phase=phase)
    else:
        on_progress(source, n, phase=phase, of=of)


def resolve_sources(target: str | None, config: Config | None, source_name: str | None = None,
                    overlay: OverlayStore | None = None) -> tuple[Config, list[SourceConfig]]:
    """Which sources an audit reads: TARGET alone (detected; a folder: every store in it),
    the config's, or both."""
    if config is None:
        if not target:
            raise ConfigError("give a TARGET (store file or postgresql:// DSN) or --config", field="TARGET")
        return Config(), zero_config_sources(target, overlay)
    if target is None:
        if not config.sources:
            raise ConfigError("the config has no [[sources]]; add one or give a TARGET", field="sources",
                              path=str(config.path))
        chosen = [config.source(source_name)] if source_name else config.sources
        return config, chosen
    if source_name:
        source = config.source(source_name)
    elif len(config.sources) == 1:
        source = config.sources[0]
    elif not config.sources:
        return config, zero_config_sources(target, overlay)
    else:
        raise ConfigError("the config has several sources; name one with --source", field="--source")
    if target.startswith(("postgresql://", "postgres://")):
        source = dataclasses.replace(source, dsn=target, dsn_env=None, path=None)
    else:
        source = dataclasses.replace(source, path=str(Path(target).resolve()))
    return config, [source]


class OverlayDescribedFolders:
    """recognize.DescribedFolders in the overlay's meta table: one entry per LanceDB folder
    (`described:<folder>`), its tables' columns with the signature and the memwatch-overlay
    version they were read with (another version describes the folder again)."""

    def __init__(self, store: OverlayStore):
        self.store = store

    def described(self, folder: str, signature: list) -> list[TableInfo] | None:
        kept = self.store.get_meta(f"described:{folder}")
        if not (isinstance(kept, dict) and kept.get("signature") == signature
                and kept.get("version") == __version__ and isinstance(kept.get("tables"), list)):
            return None
        try:
            return [TableInfo(str(t["name"]), [str(c) for c in t["columns"]], [str(c) for c in t["pk"]],
                              bool(t["rowid"])) for t in kept["tables"]]
        except (KeyError, TypeError):       # edited by hand into another shape: describe again
            return None

    def remember(self, folder: str, signature: list, tables: list[TableInfo]) -> None:
        self.store.set_meta(f"described:{folder}", {
            "signature": signature, "version": __version__,
            "tables": [{"name": t.name, "columns": list(t.columns), "pk": list(t.pk), "rowid": t.rowid}
                       for t in tables]})


def zero_config_sources(target: str, overlay: OverlayStore | None) -> list[SourceConfig]:
    """The detected source of TARGET, or one per recognised store when TARGET is a folder."""
    path = Path(target)
    folders = OverlayDescribedFolders(overlay) if overlay is not None else None
    if not target.startswith(("postgresql://", "postgres://")) and is_store_folder(path):
        scan = scan_folder(path, folders)
        if not scan.stores:
            seen = "; ".join(f"{p.relative_to(path)} ({why})" for p, why in scan.skipped[:8]) or "no store files"
            raise ConfigError(f"{target}: no known agent store in this folder (saw: {seen})", field="TARGET")
        return [source_from_detection(det, name=folder_source_name(det.matches[0].preset, path, store))
                for store, det in scan.stores]
    det = detect(target, folders)
    return [source_from_detection(det, name=_zero_config_name(target, overlay, det))]


def _zero_config_name(target: str, overlay: OverlayStore | None, det=None) -> str:
    """A stable source name for a detected store: the preset's name (`mem0`, `langgraph`)
    or the file stem, suffixed with a short hash of the target when another store already
    uses that name in this overlay (three memlife files stay three sources)."""
    is_dsn = target.startswith(("postgresql://", "postgres://"))
    best = det.matches[0].preset if det is not None and det.matches else "generic"
    if best not in GENERIC_PRESETS:
        name = best
    elif is_dsn:
        name = target.rsplit("/", 1)[-1].split("?")[0] or "postgres"
    else:
        name = Path(target).stem
    name = name.replace(":", "-")      # ':' separates a ref's parts (source:table:pk)
    identity = redact_dsn(target) if is_dsn else str(Path(target).resolve())
    if overlay is not None:
        row = overlay.source_row(name)
        if row is not None and row["target"] != identity:
            name = f"{name}-{hashlib.blake2b(identity.encode(), digest_size=3).hexdigest()}"
    return name


@dataclasses.dataclass
class AuditResult:
    """What an audit found; `header()` and `iter_facts()` give the JSON contract."""

    store: OverlayStore
    engine: SyncEngine
    as_of: float
    source_ids: list[int]
    sources: list[SourceConfig]
    thresholds: dict
    stats: list[SyncStats]
    summary: dict = dataclasses.field(default_factory=dict)
    violations: list[gate.Violation] = dataclasses.field(default_factory=list)
    scoped_thresholds: dict = dataclasses.field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.violations

    @property
    def gate(self) -> str:
        """"none" when no threshold is configured (nothing to pass), else "passed" / "failed"."""
        if not self.thresholds and not self.scoped_thresholds:
            return "none"
        return "passed" if self.passed else "failed"

    def by(self, group: str) -> dict[str, dict]:
        return self.store.summary(self.source_ids, group_by=group)

    def header(self) -> dict:
        return {"version": REPORT_VERSION, "as_of": to_iso(self.as_of), "passed": self.passed, "gate": self.gate,
                "summary": self.summary, "thresholds": self.thresholds,
                "violations": [v.message for v in self.violations],
                **({"scoped_thresholds": self.scoped_thresholds} if self.scoped_thresholds else {}),
                "sources": [{"name": s.name, "connector": s.connector, "preset": s.preset,
                             "target": s.target} for s in self.sources]}

    def iter_facts(self, order: str = "f.id", limit: int | None = None) -> Iterator[dict]:
        yield from fact_dicts(self.store.iter_report_rows(self.source_ids, order=order, limit=limit))

    def iter_table_facts(self, limit: int) -> Iterator[dict]:
        """The console table's facts: live ones stalest first, then deleted ones, the first `limit`."""
        yield from fact_dicts(self.store.iter_stalest_rows(self.source_ids, limit))

    def iter_fact_lines(self) -> Iterator[str]:
        """iter_facts() as the JSON report writes them: each fact's JSON text (fact_lines)."""
        return fact_lines(self.store.iter_report_line_rows(self.source_ids))

    def contradictions(self) -> Iterator[dict]:
        return self.store.iter_contradictions(self.source_ids)

    def count_contradictions(self) -> int:
        return self.store.count_contradictions(self.source_ids)

    def contradiction_evidence(self, older_ref: str) -> list[dict]:
        return self.store.contradiction_evidence(older_ref)

    def close(self) -> None:
        self.store.close()


# Column of a FACT_SELECT row (read by name) holding each field of REPORT_COLUMNS.
_ROW_NAMES = tuple({"source": "source_name", "table": "tbl"}.get(name, name) for name in ReportRow._fields)


def fact_dict(row) -> dict:
    """One overlay row (FACT_SELECT, read by name) in the audit JSON contract's `facts[]` shape."""
    return next(fact_dicts([tuple(row[name] for name in _ROW_NAMES)]))


def fact_dicts(rows: Iterable[Sequence]) -> Iterator[dict]:
    """Rows of REPORT_COLUMNS (ReportRow, read by name) in the audit JSON contract's `facts[]` shape."""
    iso = _IsoTexts()    # a sync stamps many facts with one first_seen
    loads = jsontext.loads
    for r in map(ReportRow._make, rows):
        contradicted_by, annotations = r.contradicted_by, r.annotations
        yield {
            "source": r.source, "table": r.table, "pk": loads(r.pk), "ref": r.ref,
            "subject": r.subject, "key": r.key, "text": r.text, "category": r.category,
            "created_at": iso[r.created_at], "updated_at": iso[r.updated_at],
            "age_days": r.age_days, "freshness": r.freshness, "label": r.label,
            "days_left": r.days_left, "days_until_expired": r.days_until_expired,
            "expires_at": iso[r.expires_at], "expired_by": r.expired_by,
            "confidence": r.confidence, "status": r.status,
            "contradicted_by": contradicted_by.split("\x1f") if contradicted_by else [],
            "first_seen": iso[r.first_seen],
            "annotations": loads(annotations) if annotations not in (None, "", "[]") else [],
        }


_encode = jsontext.encoder()
_encode_str = json.encoder.encode_basestring   # what the encoder quotes a str with (ensure_ascii off)
# A stored one-key pk whose key and value are printable ASCII without quote or backslash:
# its text is exactly what encoding the parsed object gives, so it is written as stored.
_PLAIN_PK = re.compile(r'\{"[ !#-\[\]-~]*": "[ !#-\[\]-~]*"\}')
_FACT_LINE = ('{"source": %s, "table": %s, "pk": %s, "ref": %s, "subject": %s, "key": %s, "text": %s, '
              '"category": %s, "created_at": %s, "updated_at": %s, "age_days": %s, "freshness": %s, '
              '"label": %s, "days_left": %s, "days_until_expired": %s, "expires_at": %s, "expired_by": %s, '
              '"confidence": %s, "status": %s, "contradicted_by": %s, "first_seen": %s, "annotations": %s}')


def fact_lines(rows: Iterable[Sequence]) -> Iterator[str]:
    """Rows of the store's iter_report_line_rows() (REPORT_COLUMNS, then the JSON text of
    three ISO times or NULLs) as JSON text, each exactly the encoder's text of the row's
    fact_dicts() dict (tests/test_report_lines.py), without building the dict: strings are
    quoted and finite floats written by the functions the encoder itself calls (inline for
    the usual types), times the database did not write go through to_iso(), and anything
    else (ints, non-finite floats, a pk or annotations that need parsing) through the
    encoder."""
    iso = _IsoJson()
    loads, encode, quote = jsontext.loads, _encode, _encode_str
    plain_pk = _PLAIN_PK.fullmatch
    float_text = float.__repr__
    STR, FLOAT = str, float

    def other(v) -> str:   # what is not a str (text fields) or a finite float (number fields)
        return "null" if v is None else encode(v)

    for (source, table, pk, ref, subject, key, text, category, created_at, updated_at, age_days,
         freshness, label, days_left, days_until_expired, expires_at, expired_by, confidence, status,
         contradicted_by, first_seen, annotations, created_iso, updated_iso, expires_iso) in rows:
        # v - v == 0.0 holds for every finite float and for no inf or nan
        yield _FACT_LINE % (
            quote(source) if source.__class__ is STR else other(source),
            quote(table) if table.__class__ is STR else other(table),
            pk if pk.__class__ is STR and plain_pk(pk) else encode(loads(pk)),
            quote(ref) if ref.__class__ is STR else other(ref),
            quote(subject) if subject.__class__ is STR else other(subject),
            quote(key) if key.__class__ is STR else other(key),
            quote(text) if text.__class__ is STR else other(text),
            quote(category) if category.__class__ is STR else other(category),
            created_iso or iso[created_at], updated_iso or iso[updated_at],
            float_text(age_days) if age_days.__class__ is FLOAT and age_days - age_days == 0.0 else other(age_days),
            float_text(freshness) if freshness.__class__ is FLOAT and freshness - freshness == 0.0
            else other(freshness),
            quote(label) if label.__class__ is STR else other(label),
            float_text(days_left) if days_left.__class__ is FLOAT and days_left - days_left == 0.0
            else other(days_left),
            float_text(days_until_expired) if days_until_expired.__class__ is FLOAT
            and days_until_expired - days_until_expired == 0.0 else other(days_until_expired),
            expires_iso or iso[expires_at],
            quote(expired_by) if expired_by.__class__ is STR else other(expired_by),
            float_text(confidence) if confidence.__class__ is FLOAT and confidence - confidence == 0.0
            else other(confidence),
            quote(status) if status.__class__ is STR else other(status),
            "[" + ", ".join([quote(r) for r in contradicted_by.split("\x1f")]) + "]" if contradicted_by else "[]",
            iso[first_seen],
            encode(loads(annotations)) if annotations not in (None, "", "[]") else "[]")


class _IsoJson(dict):
    """epoch -> the JSON text of to_iso(epoch) ("null" for None), computed on first use;
    holds at most `size` epochs."""

    def __init__(self, size: int = 4096):
        super().__init__({None: "null"})
        self.size = size

    def __missing__(self, epoch: float) -> str:
        if len(self) > self.size:
            self.clear()
            self[None] = "null"
        text = self[epoch] = _encode_str(to_iso(epoch))
        return text


class _IsoTexts(dict):
    """epoch -> to_iso(epoch), computed on first use; holds at most `size` epochs."""

    def __init__(self, size: int = 4096):
        super().__init__({None: None})
        self.size = size

    def __missing__(self, epoch: float) -> str:
        if len(self) > self.size:
            self.clear()
            self[None] = None
        text = self[epoch] = to_iso(epoch)
        return text


def overlay_target(config: Config | None, overlay_path: str | None) -> str:
    """Where the overlay lives: --overlay, else [overlay] dsn, else [overlay] path (a file)."""
    if overlay_path:
        return str(overlay_path)
    cfg = config or Config()
    return cfg.overlay_dsn or str(cfg.resolved_overlay_path())


def open_overlay(config: Config | None, overlay_path: str | None,
                 also_sources: Iterable[str | None] = ()) -> OverlayStore:
    """The overlay store: SQLite for a file, Postgres for a postgresql:// DSN.

    Refused (ConfigError, before anything is created) when the overlay file is one of the
    sources: memwatch's tables must never be written into the bot's own database.
    `also_sources` are more paths read this run (an audit's TARGET).
    """
    target = overlay_target(config, overlay_path)
    paths = [s.resolved_path for s in (config.sources if config else [])] + list(also_sources)
    refuse_overlay_in_sources(target, paths)
    return OverlayStore(target)


def _identity(path) -> tuple[int, int] | None:
    """(device, inode) of the file `path` names after following links; None when absent."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino)


def refuse_overlay_in_sources(overlay: str, sources: Iterable) -> None:
    """ConfigError when the overlay file is (same device and inode) any of `sources`."""
    if overlay.startswith(("postgresql://", "postgres://")):
        return
    mine = _identity(overlay)
    if mine is None:
        return
    for path in sources:
        if path is None or str(path).startswith(("postgresql://", "postgres://")):
            continue
        if _identity(path) == mine:
            raise ConfigError(f"{overlay} is the source {path}: the overlay must be a file of its own "
                              "(memwatch never writes into a bot's store); give another --overlay",
                              field="--overlay")


def rescore_and_summarize(store: OverlayStore, engine: SyncEngine, as_of: float, ids: list[int]) -> dict:
    """Rescore the live facts of `ids` not scored at `as_of`, then their summary. When none
    is unscored (a re-audit of an unchanged store at the same as-of) the rescore would write
    nothing, and the one scan that finds that out is the summary's own (summary_if_scored)."""
    summary = store.summary_if_scored(ids, as_of)
    if summary is None:
        engine.rescore(as_of, ids)
        summary = store.summary(ids)
    return summary


def judge(result: AuditResult, config: Config, summary: dict | None = None) -> None:
    """Fill the summary (`summary`, when the caller has it) and the gate's violations
    (overall, per category, per source)."""
    result.summary = result.store.summary(result.source_ids) if summary is None else summary
    result.violations = gate.evaluate(result.summary, result.thresholds)
    scoped = result.scoped_thresholds = gate.scoped_thresholds(config.ci)
    if scoped:
        groups = {table: result.by(gate.SCOPES[table]) for table in scoped}
        result.violations += gate.evaluate_scoped(scoped, groups)


def audit(target: str | None = None, config: Config | None = None, *, as_of: float | None = None,
          overlay_path: str | None = None, source_name: str | None = None,
          thresholds: dict | None = None, detector=None,
          on_progress: Callable[[str, int], None] | None = None) -> AuditResult:
    """Sync the chosen sources fully at `as_of` and return the judged result.

    Example:
        result = audit("my_agent.db", as_of=parse_as_of("2026-11-29"))
        print(result.summary["stale"], result.passed)
    """
    as_of = time.time() if as_of is None else as_of
    store = open_overlay(config, overlay_path, also_sources=[target] if target else [])
    try:
        cfg, sources = resolve_sources(target, config, source_name, store)
        refuse_overlay_in_sources(overlay_target(config, overlay_path), [s.resolved_path for s in sources])
        factory = None
        if detector is None and not _detection_off(cfg):   # off: the detection modules are not even imported
            from memwatch_overlay.overlay.detect.blocks import make_detector
            if _default_detector(cfg):      # shipped rules only: nothing to fail on, made when needed
                factory = partial(make_detector, cfg)
            else:                           # a pack, embeddings or a judge: their errors come first
                detector = make_detector(cfg)
        engine = SyncEngine(store, cfg, detector=detector, detector_factory=factory)
        store.defer_checkpoints()       # copied into the file while the summary and the report are made
        stats = []
        for source in sources:
            progress = None
            if on_progress:
                # on_progress(source, records, total=SizeEstimate | None, phase=str | None), and
                # while contradictions are detected on_progress(source, facts done, phase=...,
                # of=facts to do)
                from memwatch_overlay.connectors.estimate import estimate
                on_progress(source.name, 0, total=estimate(source))
                progress = partial(_sync_progress, on_progress, source.name)
            stats.append(engine.sync(source, as_of=as_of, full=True, on_progress=progress))
        store.checkpoint_in_background()
        ids = [store.source_row(s.name)["id"] for s in sources]
        summary = rescore_and_summarize(store, engine, as_of, ids)
        result = AuditResult(store, engine, as_of, ids, sources,
                             gate.merge_thresholds(cfg.ci, thresholds or {}), stats)
        judge(result, cfg, summary)
        store.record_run("audit", as_of, [s.name for s in sources], result.passed, result.summary)
        return result
    except BaseException:
        store.close()
        raise


def _detection_off(cfg: Config) -> bool:
    """`[detector] enabled = false`: make_detector(cfg) would be None."""
    return dict(getattr(cfg, "detector", {}) or {}).get("enabled") is False


def _default_detector(cfg: Config) -> bool:
    """The config asks for the shipped rule detector alone (no slot pack of its own, no
    embeddings, no judge), or for none: making it cannot fail, so it can wait until a sync
    has something to compare."""
    det = dict(getattr(cfg, "detector", {}) or {})
    emb = dict(getattr(cfg, "embeddings", {}) or {})
    judge = dict(getattr(cfg, "judge", {}) or {})
    return not det.get("pack") and not emb and not judge.get("url")


def overlay_report(config: Config | None, *, overlay_path: str | None = None, as_of: float | None = None,
                   source_name: str | None = None, thresholds: dict | None = None) -> AuditResult:
    """`report`: the overlay's current state, rescored at `as_of`, without reading any source."""
    as_of = time.time() if as_of is None else as_of
    store = open_overlay(config, overlay_path)
    try:
        cfg = config or Config()
        rows = store.sources()
        if source_name:
            rows = [r for r in rows if r["name"] == source_name]
        ids = [r["id"] for r in rows]
        engine = SyncEngine(store, cfg)
        summary = rescore_and_summarize(store, engine, as_of, ids)
        sources = [SourceConfig(name=r["name"], connector=r["connector"], preset=r["preset"],
                                path=r["target"] if r["connector"] != "postgres" else None,
                                dsn=r["target"] if r["connector"] == "postgres" else None) for r in rows]
        result = AuditResult(store, engine, as_of, ids, sources,
                             gate.merge_thresholds(cfg.ci, thresholds or {}), [])
        judge(result, cfg, summary)
        return result
    except BaseException:
        store.close()
        raise
