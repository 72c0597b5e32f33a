"""Line formats for very large reports: NDJSON and CSV, one fact a line, written as the
facts stream past (nothing is held; a 300k-fact report costs one fact's memory).

- ``ndjson``: each line one fact, in the JSON contract's ``facts[]`` shape.
- ``csv``: a header row, then one row per fact with the columns in CSV_COLUMNS;
  ``contradicted_by`` joined by spaces, ``pk`` as JSON text, empty cells for nulls.

Both list the live facts, as every renderer does (a fact deleted in its source or
forgotten is skipped; ``--format json`` keeps deleted ones with their status). The
summary is in neither (``--format json --summary-only`` gives it alone).
"""
from __future__ import annotations

import csv
import json
from typing import Any, Mapping, TextIO

from memwatch_overlay.core import fastjson as jsontext
from memwatch_overlay.overlay.output.formats.base import Renderer
from memwatch_overlay.overlay.output.formats.digest import GONE

CSV_COLUMNS = ("ref", "source", "subject", "key", "text", "category", "freshness", "label", "status",
               "days_left", "days_until_expired", "age_days", "confidence", "created_at", "updated_at",
               "expires_at", "contradicted_by", "pk")


class NdjsonRenderer(Renderer):
    """One JSON object per line per fact."""

    def __init__(self, report: Mapping[str, Any], stream: TextIO, **options: Any):
        super().__init__(report, stream)
        self.encode = jsontext.encoder()

    def add(self, fact: Mapping[str, Any]) -> None:
        if fact.get("status") in GONE:
            return
        self.stream.write(self.encode(fact) + "\n")

    def close(self) -> None:
        pass


class CsvRenderer(Renderer):
    """A header row, then one row per fact (RFC 4180 quoting, by the csv module)."""

    def __init__(self, report: Mapping[str, Any], stream: TextIO, **options: Any):
        super().__init__(report, stream)
        self.writer = csv.writer(stream, lineterminator="\n")
        self.writer.writerow(CSV_COLUMNS)

    def add(self, fact: Mapping[str, Any]) -> None:
        if fact.get("status") in GONE:
            return
        row = []
        for col in CSV_COLUMNS:
            value = fact.get(col)
            if col == "contradicted_by":
                value = " ".join(value or ())
            elif col == "pk":
                value = json.dumps(value, ensure_ascii=False)
            row.append("" if value is None else value)
        self.writer.writerow(row)

    def close(self) -> None:
        pass
