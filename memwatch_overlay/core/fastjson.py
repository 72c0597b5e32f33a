"""JSON text of the audit report without the standard library's per-call overhead.

A 100k-fact report decodes a primary key per fact and encodes every fact and
contradiction; `json.loads` and `JSONEncoder.encode` spend much of their time in Python
set-up around the C code that does the work. `loads` and `encoder()` call that C code
directly and give exactly what the plain functions give (tests/test_report_facts.py).
"""
from __future__ import annotations

import json
from typing import Any, Callable

# the C scanner json.loads runs (default options); set in __init__, so typeshed does not list it
_scan = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def loads(text: str) -> Any:
    """json.loads(text), without its wrapper when `text` is exactly one JSON value (stored
    keys and annotations always are); anything else goes to json.loads itself."""
    try:
        value, end = _scan(text, 0)
    except (StopIteration, TypeError):   # leading whitespace, not JSON, bytes: json.loads decides
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


def encoder(ensure_ascii: bool = False) -> Callable[[Any], str]:
    """`json.JSONEncoder(ensure_ascii=ensure_ascii).encode` (with True: `json.dumps(value)`)
    with its C encoder built once, not on every call; the plain method when this Python has
    no C encoder or it does not give the same text for a sample of every kind of value."""
    plain = json.JSONEncoder(ensure_ascii=ensure_ascii)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return plain.encode
    strings = json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring
    try:   # markers None: no cycle check (report items are trees of plain values)
        c_encode = make(None, plain.default, strings, None, plain.key_separator,
                        plain.item_separator, plain.sort_keys, plain.skipkeys, plain.allow_nan)
    except TypeError:               # another signature in another Python version
        return plain.encode

    def encode(item: Any) -> str:
        return "".join(c_encode(item, 0))

    try:
        same = encode(_SAMPLE) == plain.encode(_SAMPLE)
    except Exception:  # noqa: BLE001 - any failure means: keep the plain encoder
        same = False
    return encode if same else plain.encode


_SAMPLE = {"text": "é ✓ \"q\" \\ \n\t\x1f 😀", "floats": [0.1, 1e-05, 1e16, 123456.789, -0.0, float("inf")],
           "others": [1, -7, True, False, None], "nested": {"empty": [], "object": {}, "k": [{"a": "b"}]}}
