"""SARIF 2.1.0: one rule per problem kind (stale, expired, contradicted).

Each result points at the store (``physicalLocation.artifactLocation.uri``: the
source's path, or its DSN without password) and at the row (``logicalLocations``
with the fact's ref). A contradicted fact lists the newer facts as related
locations, with the detector's evidence. ``partialFingerprints`` carry the ref so
code-scanning services match a result across runs (a store is not a text file).

Memory: the three rules are fixed, so results need no grouping and are written as
the facts stream by; nothing is kept per fact. At most `max_results` results are
written (GitHub code scanning takes 25,000 per run); the rest are counted in
``runs[0].properties.omitted_results``.
"""
from __future__ import annotations

import json
from collections.abc import Mapping   # isinstance through typing.Mapping is several times slower
from pathlib import Path
from typing import Any, Callable, TextIO
from urllib.parse import quote

from memwatch_overlay.core.version import __version__
from memwatch_overlay.core import fastjson as jsontext
from memwatch_overlay.overlay.output.formats.base import Renderer
from memwatch_overlay.overlay.output.formats.digest import (
    describe,
    problems,
    safe_target,
    shorten,
    source_targets,
)

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
MAX_RESULTS = 25_000
_encode = jsontext.encoder()   # json.dumps(…, ensure_ascii=False), its C encoder built once
RULES = {
    "stale": ("MW001", "StaleMemoryFact", "warning",
              "A memory fact's freshness fell below the stale threshold.",
              "The fact has not been re-learned, updated or used for long enough that its "
              "freshness score is in the stale band. Confirm it, refresh it or let it expire."),
    "expired": ("MW002", "ExpiredMemoryFact", "error",
                "A memory fact is expired (score below the expiry threshold or past its TTL).",
                "An agent that still retrieves this fact may act on outdated information. "
                "Delete it or mark it expired through the store's own columns."),
    "contradicted": ("MW003", "ContradictedMemoryFact", "error",
                     "A newer memory fact contradicts this one.",
                     "The store holds two facts about the same subject and category that "
                     "disagree; the older one should be retired."),
}


class SarifRenderer(Renderer):
    """SARIF 2.1.0, written as the facts arrive. Options: `max_results`, `root`.

    `root` is the folder store paths are made relative to (default: the current one),
    so code-scanning services can match them to files of the repository.
    """

    def __init__(self, report: Mapping[str, Any], stream: TextIO, *,
                 max_results: int = MAX_RESULTS, root: str | Path | None = None):
        super().__init__(report, stream)
        self.max_results = max_results
        self.base = Path(root) if root is not None else Path.cwd()
        self.targets = source_targets(report, self.base)
        contradictions = report.get("contradictions") or ()
        # a live report looks one contradicted fact up at a time; a plain list is indexed once
        self.evidence_of = getattr(contradictions, "evidence_of", None) or _evidence_by_older(contradictions).get
        self.uris: dict[str, str] = {}   # source -> its store's URI (resolving paths touches the disk)
        self.written = self.omitted = 0
        head = {"$schema": SCHEMA_URI, "version": "2.1.0"}
        stream.write(json.dumps(head)[:-1] + ', "runs": [{\n"tool": ')
        stream.write(json.dumps(_tool()))
        stream.write(',\n"results": [')

    def add(self, fact: Mapping[str, Any]) -> None:
        for kind in problems(fact):
            if self.written >= self.max_results:
                self.omitted += 1
                continue
            source = str(fact.get("source") or "")
            uri = self.uris.get(source)
            if uri is None:
                uri = self.uris[source] = _uri(self.targets.get(source) or source or "memory", self.base)
            result = _result(fact, kind, uri, self.evidence_of)
            sep = "\n" if self.written == 0 else ",\n"
            self.stream.write(sep + _encode(result))
            self.written += 1

    def close(self) -> None:
        report, w = self.report, self.stream.write
        w("\n],\n")
        invocation = {"executionSuccessful": True}
        if report.get("as_of"):
            invocation["properties"] = {"as_of": str(report["as_of"])}
        w('"invocations": ' + json.dumps([invocation]) + ",\n")
        props = {"passed": report.get("passed"), "summary": report.get("summary") or {},
                 "thresholds": report.get("thresholds") or {},
                 "violations": list(report.get("violations") or ()),
                 "omitted_results": self.omitted}
        w('"properties": ' + json.dumps(props, ensure_ascii=False, default=str))
        w("\n}]}\n")


render = SarifRenderer.render


def _tool() -> dict:
    rules = []
    for kind, (rule_id, name, level, short, full) in RULES.items():
        rules.append({
            "id": rule_id, "name": name,
            "shortDescription": {"text": short},
            "fullDescription": {"text": full},
            "help": {"text": full},
            "defaultConfiguration": {"level": level},
            "properties": {"tags": ["memory", kind]},
        })
    return {"driver": {"name": "memwatch-overlay", "version": __version__,
                       "semanticVersion": __version__, "rules": rules}}


def _result(fact: Mapping, kind: str, uri: str, evidence_of: Callable[[str], list | None]) -> dict:
    """One SARIF result; `uri` is the store's (see `_uri`)."""
    rule_id, _, level, _, _ = RULES[kind]
    ref = str(fact.get("ref") or "")
    logical = {"fullyQualifiedName": ref, "name": _pk_text(fact), "kind": "object"}
    location = {"physicalLocation": {"artifactLocation": {"uri": uri}},
                "logicalLocations": [logical]}
    result = {
        "ruleId": rule_id,
        "ruleIndex": list(RULES).index(kind),
        "level": level,
        "message": {"text": f"{kind.capitalize()} memory fact: {describe(fact)}"},
        "locations": [location],
        "partialFingerprints": {"memwatchRef/v1": f"{ref}#{kind}"},
        "properties": {k: fact.get(k) for k in
                       ("source", "table", "subject", "key", "category", "freshness",
                        "label", "age_days", "days_left", "status") if fact.get(k) is not None},
    }
    if kind == "contradicted":
        related = []
        for i, item in enumerate(_contradictions_of(fact, evidence_of), start=1):
            text = f"contradicted by {item['newer']}"
            if item.get("evidence"):
                text += f": {shorten(item['evidence'], 300)}"
            related.append({"id": i, "message": {"text": text},
                            "physicalLocation": {"artifactLocation": {"uri": uri}},
                            "logicalLocations": [{"fullyQualifiedName": item["newer"],
                                                  "kind": "object"}]})
        if related:
            result["relatedLocations"] = related
    return result


def _contradictions_of(fact: Mapping, evidence_of: Callable[[str], list | None]) -> list[dict]:
    """Contradictions whose older side is `fact`, plus any contradicted_by refs not among them."""
    ref = str(fact.get("ref") or "")
    items = list(evidence_of(ref) or ())
    known = {i["newer"] for i in items}
    for newer in fact.get("contradicted_by") or ():
        if str(newer) not in known:
            items.append({"newer": str(newer)})
    return items


def _evidence_by_older(contradictions) -> dict[str, list]:
    out: dict[str, list] = {}
    for c in contradictions:
        if isinstance(c, Mapping) and c.get("older") and c.get("newer"):
            out.setdefault(str(c["older"]), []).append(
                {"newer": str(c["newer"]), "evidence": c.get("evidence")})
    return out


def _pk_text(fact: Mapping) -> str:
    pk = fact.get("pk")
    if isinstance(pk, Mapping):
        return ",".join(f"{k}={v}" for k, v in pk.items())
    return str(pk if pk is not None else fact.get("ref", ""))


def _uri(target: str, base: Path) -> str:
    """A URI reference for a store: a DSN as it is (password removed), a path percent-encoded,
    relative to `base` when it lies below it, else a file: URI."""
    target = safe_target(target, base)
    if "://" in target:
        return target
    path = Path(target)
    if path.is_absolute():
        return path.as_uri()
    return quote(path.as_posix())
