"""parse_timestamp's fast path for ISO text gives exactly what the general path gives.

A leading space skips the fast path (the general path strips it), so each value is
parsed both ways and compared."""
import datetime as dt
import random

import pytest

from memwatch_overlay.core.timeparse import parse_timestamp

FORMATS = ["%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S.%f+00:00",
           "%Y-%m-%dT%H:%M:%S+05:30", "%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%d", "%Y-%m-%dT%H:%M:%S.%f-08:00"]


def test_fast_path_matches_the_general_path():
    rnd = random.Random(2)
    for _ in range(3000):
        moment = dt.datetime(1990, 1, 1) + dt.timedelta(seconds=rnd.uniform(0, 40 * 365 * 86400))
        text = moment.strftime(rnd.choice(FORMATS))
        assert parse_timestamp(text) == parse_timestamp(" " + text), text


@pytest.mark.parametrize("text", ["2024-13-01 00:00:00", "2024-02-30", "2024-01-01 25:00", "1732886379",
                                  "20241129", "2024-11-29 13:19:39 "])
def test_what_the_fast_path_refuses_still_parses_as_before(text):
    try:
        expected = parse_timestamp(" " + text)
    except ValueError:
        with pytest.raises(ValueError):
            parse_timestamp(text)
    else:
        assert parse_timestamp(text) == expected
