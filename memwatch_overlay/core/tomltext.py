"""TOML values written by memwatch (init's memwatch.toml, the snippets `sources detect` and
error messages print): always valid TOML, whatever the path, name or DSN holds.

A basic string escapes what TOML forbids raw: `"`, `\\`, and every control character
(U+0000-U+001F and U+007F), as `\\uXXXX` or its short form.

Example:
    >>> print(toml_string('C:\\\\bots\\\\"my" store.db'))
    "C:\\\\bots\\\\\\"my\\" store.db"
    >>> import tomllib
    >>> tomllib.loads("p = " + toml_string("tab\\there\\x7f"))["p"] == "tab\\there\\x7f"
    True
    >>> toml_value(["id", 3, True])
    '["id", 3, true]'
"""
from __future__ import annotations

_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def toml_string(text: str) -> str:
    """`text` as a TOML basic string, quotes included."""
    out = []
    for ch in str(text):
        if ch in _SHORT:
            out.append(_SHORT[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_value(value) -> str:
    """A TOML value for a string, number, bool or list of them (anything else as a string)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return toml_string(str(value))
