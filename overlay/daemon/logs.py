"""Daemon log lines: readable text on a terminal, one JSON object per line for log shippers.

Library code logs through `logging` with structured `extra` fields (`source`, `event`,
counters); these formatters decide how a line looks. Logs go to stderr, never stdout.
"""
from __future__ import annotations

import datetime as dt
import json
import logging
import sys
from typing import IO

LOGGER_NAME = "memwatch_overlay.daemon"
# LogRecord attributes that are not structured fields of ours.
_STANDARD = set(vars(logging.LogRecord("x", 0, "x", 0, "x", None, None))) | {"message", "asctime"}


def fields_of(record: logging.LogRecord) -> dict:
    """The structured fields a call passed with `extra=`."""
    return {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}


def _ts(record: logging.LogRecord) -> str:
    return dt.datetime.fromtimestamp(record.created, dt.timezone.utc).isoformat(timespec="milliseconds")


class JsonFormatter(logging.Formatter):
    """`{"ts": …, "level": "info", "msg": …, "source": …, …}` on one line."""

    def format(self, record: logging.LogRecord) -> str:
        out = {"ts": _ts(record), "level": record.levelname.lower(), "msg": record.getMessage()}
        out.update(fields_of(record))
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """`2026-01-05T10:00:00.123+00:00 INFO  bot: synced 1 record …` (fields already in the message)."""

    def format(self, record: logging.LogRecord) -> str:
        line = f"{_ts(record)} {record.levelname:<5} {record.getMessage()}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def configure(fmt: str = "text", stream: IO[str] | None = None, level: int = logging.INFO) -> logging.Logger:
    """The daemon's logger, writing `fmt` lines to `stream` (stderr by default)."""
    logger = logging.getLogger(LOGGER_NAME)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    return logger
