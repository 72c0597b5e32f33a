"""Timestamps as agent stores write them, turned into UTC epoch seconds.

Stores disagree on formats: ISO-8601 with or without a zone (``T`` or space),
SQLite ``CURRENT_TIMESTAMP`` text, unix epoch numbers (seconds or milliseconds) or
the same as strings (CrewAI writes ``str(time.time())``), sometimes as bytes.
Naive values are UTC, as SQLite's and most ORMs' are.
"""
from __future__ import annotations

import datetime as dt
import re

UTC = dt.timezone.utc
DAY = 86400.0                   # seconds in a day: ages and half-lives are in days
_EPOCH_MS_THRESHOLD = 1e11  # larger numbers are milliseconds (year 5138 in seconds)
_NUMERIC = re.compile(r"^\s*-?\d+(\.\d+)?\s*$")
_NAIVE_EPOCH = dt.datetime(1970, 1, 1)
# The moments a report can print (datetime's years 1..9999, UTC): anything outside, or NaN
# and infinities, is "not a timestamp" (a warning naming the field), never a crash later.
MIN_EPOCH = -62135596800.0        # 0001-01-01T00:00:00Z
MAX_EPOCH = 253402300799.0        # 9999-12-31T23:59:59Z


def _in_range(epoch: float, value) -> float:
    if not (MIN_EPOCH <= epoch <= MAX_EPOCH):      # also False for NaN
        raise ValueError(f"not a timestamp (out of range): {value!r}")
    return epoch


def parse_timestamp(value) -> float | None:
    """Return epoch seconds (UTC) for a stored timestamp, None for empty values.

    Raises ValueError for text that is not a timestamp, or one outside years 1..9999 UTC.

    Example:
        >>> parse_timestamp("2024-11-29 13:19:39")
        1732886379.0
    """
    if value.__class__ is str and len(value) >= 10 and value[4] == "-":
        # Fast path for ISO text (most stores): the same result as the general path below.
        try:
            parsed = dt.datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            if parsed.tzinfo is None:
                return (parsed - _NAIVE_EPOCH).total_seconds()
            return _in_range(_aware_epoch(parsed), value)
    if value is None or value == "" or value == b"":
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = bytes(value).decode("utf-8", "replace")
    if isinstance(value, bool):
        raise ValueError(f"not a timestamp: {value!r}")
    if isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:           # a 400-digit integer
            raise ValueError(f"not a timestamp (out of range): {value!r}") from None
        return _in_range(number / 1000.0 if abs(number) > _EPOCH_MS_THRESHOLD else number, value)
    if isinstance(value, dt.datetime):
        return _datetime_to_epoch(value)
    if isinstance(value, dt.date):
        return _datetime_to_epoch(dt.datetime(value.year, value.month, value.day))
    text = str(value).strip()
    if _NUMERIC.match(text):
        return parse_timestamp(float(text))
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"not a timestamp: {value!r}") from None
    return _datetime_to_epoch(parsed)


def _aware_epoch(value: dt.datetime) -> float:
    """Epoch seconds of an aware datetime, computed without datetime overflow at the year edges."""
    offset = value.utcoffset() or dt.timedelta(0)
    return (value.replace(tzinfo=None) - _NAIVE_EPOCH - offset).total_seconds()


def _datetime_to_epoch(value: dt.datetime) -> float:
    if value.tzinfo is None:
        return (value - _NAIVE_EPOCH).total_seconds()
    return _in_range(_aware_epoch(value), value)


def parse_as_of(text: str | None) -> float:
    """`--as-of` value: a date or datetime (naive = UTC); None means now."""
    if text is None:
        return dt.datetime.now(UTC).timestamp()
    epoch = parse_timestamp(text)
    if epoch is None:                   # "" or blank: not "now", which would hide a typo
        raise ValueError(f"not a date or datetime: {text!r}")
    return epoch


def to_iso(epoch: float | None) -> str | None:
    """Epoch seconds as ISO-8601 UTC text with a `+00:00` zone, for reports."""
    if epoch is None:
        return None
    return dt.datetime.fromtimestamp(epoch, UTC).isoformat()


def format_like(sample, epoch: float):
    """Render `epoch` in the format a stored `sample` value uses.

    Write-back keeps a column's own format so the bot (and e.g. LangGraph's TTL
    sweeper, which compares text) still reads it.
    """
    moment = dt.datetime.fromtimestamp(epoch, UTC)
    if isinstance(sample, (int,)) and not isinstance(sample, bool):
        return int(epoch * 1000) if abs(sample) > _EPOCH_MS_THRESHOLD else int(epoch)
    if isinstance(sample, float):
        return epoch * 1000.0 if abs(sample) > _EPOCH_MS_THRESHOLD else epoch
    if sample is None:
        return moment.isoformat()
    text = sample.decode() if isinstance(sample, (bytes, bytearray)) else str(sample)
    if _NUMERIC.match(text):
        return str(epoch)
    sep = "T" if "T" in text else " "
    has_zone = bool(re.search(r"([+-]\d\d:?\d\d|[Zz])$", text))
    has_fraction = bool(re.search(r"\d\d:\d\d:\d\d\.\d+", text))
    if re.fullmatch(r"\d{4}-\d\d-\d\d", text):
        return moment.strftime("%Y-%m-%d")
    out = moment.strftime(f"%Y-%m-%d{sep}%H:%M:%S")
    if has_fraction:
        out += moment.strftime(".%f")
    if has_zone:
        out += "Z" if text.endswith(("Z", "z")) else "+00:00"
    return out
