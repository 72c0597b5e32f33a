"""Exact numeric helpers for the scoring hot path."""
from __future__ import annotations

_POW10 = tuple(float(10 ** n) for n in range(16))   # exact doubles


def fast_round(x: float, ndigits: int) -> float:
    """`round(x, ndigits)` to the last bit (and the type), in about half the time.

    round() rounds the exact binary value of x half-to-even to `ndigits` decimals, giving
    an integer k of 10**-ndigits units, and returns the double nearest k / 10**ndigits.
    Here y = x * 10**ndigits is the exact product t correctly rounded. Below 2**52 every
    half-integer h is a double, and rounding is monotonic, so y < h implies t < h and
    y > h implies t > h: unless y is itself a half-integer, t and y round to the same k.
    Then k (< 2**53) and 10**ndigits are exact doubles and k / 10**ndigits is a correctly
    rounded division: round()'s double. Zero is returned as is (sign included); a tie,
    a negative, huge, nan or inf value, or one not a float, is left to round() itself.
    tests/test_scoring_reference.py holds it to round() on ties, near-ties and random values.
    """
    if x.__class__ is float:
        scale = _POW10[ndigits]
        y = x * scale
        if 0.0 < y < 1e15:
            k = round(y)
            if abs(y - k) != 0.5:       # y - k is exact: k is y's nearest integer
                return k / scale
        elif x == 0.0:
            return x
    return round(x, ndigits)
