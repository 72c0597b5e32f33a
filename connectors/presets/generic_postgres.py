"""A generic Postgres table: the `generic` heuristics, for tables with a primary key.

Postgres has no rowid to fall back on, so only tables with a primary key qualify.
"""
from __future__ import annotations

from memwatch_overlay.connectors.postgres import PostgresConnector
from memwatch_overlay.connectors.presets.generic import GenericTable


class GenericPostgres(PostgresConnector):
    preset = "generic-postgres"
    kind = "postgres"
    description = "Any Postgres table with a primary key, a memory-text column and a timestamp column"
    defaults: dict = {}

    @classmethod
    def match(cls, tables):
        m = GenericTable.match([t for t in tables if t.pk])
        if m is not None:
            m.preset = cls.preset
        return m
