import datetime as dt

import pytest

from memwatch_overlay.core.timeparse import format_like, parse_timestamp

EPOCH = dt.datetime(2024, 11, 29, 13, 19, 39, tzinfo=dt.timezone.utc).timestamp()


@pytest.mark.parametrize("value", [
    "2024-11-29 13:19:39",                 # SQLite CURRENT_TIMESTAMP (naive = UTC)
    "2024-11-29T13:19:39",
    "2024-11-29T13:19:39+00:00",
    "2024-11-29T13:19:39Z",
    "2024-11-29T15:19:39+02:00",
    EPOCH, int(EPOCH), str(EPOCH), str(int(EPOCH)).encode(),
    EPOCH * 1000,                          # milliseconds
])
def test_formats_agent_stores_write(value):
    assert parse_timestamp(value) == pytest.approx(EPOCH)


def test_empty_and_bad_values():
    assert parse_timestamp(None) is None and parse_timestamp("") is None
    with pytest.raises(ValueError):
        parse_timestamp("yesterday")


@pytest.mark.parametrize("sample,expected", [
    ("2025-01-01 00:00:00.000000+00:00", "2024-11-29 13:19:39.000000+00:00"),   # LangGraph expires_at
    ("2025-01-01 00:00:00", "2024-11-29 13:19:39"),
    ("2025-01-01T00:00:00Z", "2024-11-29T13:19:39Z"),
    ("2025-01-01", "2024-11-29"),
    (1700000000, int(EPOCH)),
    (1700000000.5, EPOCH),
])
def test_format_like_keeps_the_column_format(sample, expected):
    assert format_like(sample, EPOCH) == expected
