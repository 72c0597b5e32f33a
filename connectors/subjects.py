"""Subjects as the config maps them: `subject_pattern` (a regex) and `subject_map` (a table).

Conversation stores key their rows by a session id, and apps often open one session per
conversation (`chat-u_erin-2026-11-20`, a uuid): then one user's facts are split over many
subjects and never meet. A source may say how a raw subject becomes the user:

    subject_pattern = '^chat-(?P<subject>[^-]+)-'   # the named group (or group 1) is the subject
    [sources.subject_map]                            # exact values, checked first
    "3f2a…" = "u_erin"

A value neither names is kept as it is. For conversation-log presets the raw subject is the
session id as stored (no shared prefix stripped). Every connector's records go through the
same mapping (registry.make_connector wraps read() and fetch()), so write-back and the
deletion pass see the subjects the audit saw.

A full read of a conversation log also says when every subject has a single conversation
(session): facts are then only compared within one conversation, which is right for one
session per user and wrong for one session per conversation.
"""
from __future__ import annotations

import functools
import re

from memwatch_overlay.connectors.base import Connector

TRACKED_SUBJECTS = 100_000      # subjects whose conversations a full read counts (memory bound)


class SubjectMapping:
    """raw subject -> configured subject (memoised: a store repeats few distinct values)."""

    def __init__(self, pattern: re.Pattern | None, table: dict[str, str] | None):
        self.pattern = pattern
        self.table = dict(table or {})
        self.apply = functools.lru_cache(maxsize=65536)(self._apply)

    @property
    def configured(self) -> bool:
        return self.pattern is not None or bool(self.table)

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


def single_conversation_note(subjects: int, mapped: bool) -> str:
    how = ("subject_pattern / subject_map grouped no two sessions" if mapped else
           "if the app opens one session per conversation, map sessions to users with subject_pattern "
           "or [sources.subject_map] (docs/stores.md)")
    return (f"each of the {subjects} subjects has a single conversation (session), so facts are only "
            f"compared within one conversation; {how}")


def apply_subject_mapping(connector: Connector) -> Connector:
    """Route the connector's read() and fetch() through the source's subject mapping, if any
    (and count conversations per subject on full reads of a conversation log)."""
    source = connector.source
    pattern = getattr(source, "subject_pattern", None)
    mapping = SubjectMapping(re.compile(pattern) if pattern else None, getattr(source, "subject_map", None))
    conversations = getattr(connector, "conversation_log", False)
    if not mapping.configured and not conversations:
        return connector
    connector.subject_mapping = mapping
    read, fetch, keys = connector.read, connector.fetch, connector.keys
    depth = [0]     # a base fetch()/keys() reads through read(): only the outermost call maps

    def outermost(gen_fn):
        @functools.wraps(gen_fn)
        def wrapper(*args):
            if depth[0]:
                yield from gen_fn(*args, inner=True)
                return
            depth[0] += 1
            try:
                yield from gen_fn(*args, inner=False)
            finally:
                depth[0] -= 1
        return wrapper

    @outermost
    def mapped_read(cursor=None, inner=False):
        if inner:
            yield from read(cursor)
            return
        sessions: dict[str, object] | None = {} if conversations and not cursor else None
        for rec in read(cursor):
            raw = rec.subject
            rec.subject = mapping.apply(raw)
            if sessions is not None and rec.subject is not None and len(sessions) < TRACKED_SUBJECTS:
                first = sessions.setdefault(rec.subject, raw)
                if first is not _MANY and first != raw:
                    sessions[rec.subject] = _MANY
            yield rec
        if sessions and len(sessions) >= 2 and _MANY not in sessions.values():
            connector.warn(single_conversation_note(len(sessions), mapping.configured))

    @outermost
    def mapped_fetch(pks, inner=False):
        for rec in fetch(pks):
            if not inner:
                rec.subject = mapping.apply(rec.subject)
            yield rec

    @outermost
    def quiet_keys(inner=False):
        yield from keys()

    connector.read = mapped_read
    connector.fetch = mapped_fetch
    connector.keys = quiet_keys
    return connector


_MANY = object()
