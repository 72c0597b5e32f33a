"""Subjects as the config maps them: `subject_pattern` (a regex) and `subject_map` (a table).

Conversation stores key their rows by a session id, and apps often open one session per
conversation (`chat-u_erin-2026-11-20`, a uuid): then one user's facts are split over many
subjects and never meet. A source may say how a raw subject becomes the user:

    subject_pattern = '^chat-(?P<subject>[^-]+)-'   # the named group (or group 1) is the subject
    [sources.subject_map]                            # exact values, checked first
    "3f2a…" = "u_erin"

A value the pattern does not match (and the map does not name) is kept as it is. Every
connector's records go through the same mapping (registry.make_connector), so write-back
and the deletion pass see the subjects the audit saw.
"""
from __future__ import annotations

import functools
import re
from typing import Callable, Iterator

from memwatch_overlay.connectors.base import Connector, Record


class SubjectMapping:
    """raw subject -> configured subject (memoised: a store repeats few distinct values)."""

    def __init__(self, pattern: re.Pattern | None, table: dict[str, str] | None):
        self.pattern = pattern
        self.table = dict(table or {})
        self.apply = functools.lru_cache(maxsize=65536)(self._apply)

    def _apply(self, raw: str | None) -> str | None:
        if raw is None:
            return None
        if raw in self.table:
            return self.table[raw]
        if self.pattern is not None:
            m = self.pattern.search(raw)
            if m:
                value = m.groupdict().get("subject") or (m.group(1) if m.re.groups else m.group(0))
                if value:
                    return value
        return raw

    def records(self, records) -> Iterator[Record]:
        apply = self.apply
        for rec in records:
            rec.subject = apply(rec.subject)
            yield rec

    def wrap(self, method: Callable[..., Iterator[Record]]) -> Callable[..., Iterator[Record]]:
        @functools.wraps(method)
        def mapped(*args, **kwargs):
            return self.records(method(*args, **kwargs))
        return mapped


def apply_subject_mapping(connector: Connector) -> Connector:
    """Route the connector's read() and fetch() through the source's subject mapping, if any."""
    source = connector.source
    pattern = getattr(source, "subject_pattern", None)
    table = getattr(source, "subject_map", None)
    if not pattern and not table:
        return connector
    mapping = SubjectMapping(re.compile(pattern) if isinstance(pattern, str) else pattern, table)
    connector.subject_mapping = mapping
    connector.read = mapping.wrap(connector.read)
    connector.fetch = mapping.wrap(connector.fetch)
    return connector
