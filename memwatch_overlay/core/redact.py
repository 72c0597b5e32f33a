"""Keep secrets out of messages and logs."""
from __future__ import annotations

import re

_PASSWORD_IN_URL = re.compile(r"(?P<head>[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]*:)(?P<pw>[^@\s]*)(?P<tail>@)")
_PASSWORD_KV = re.compile(r"(?P<head>\bpassword\s*=\s*)(?P<pw>'[^']*'|\S+)", re.IGNORECASE)


def redact_dsn(text: str | None) -> str:
    """Replace any password in a DSN (URL or key=value form) with ***."""
    if not text:
        return text or ""
    text = _PASSWORD_IN_URL.sub(lambda m: m["head"] + "***" + m["tail"], text)
    return _PASSWORD_KV.sub(lambda m: m["head"] + "***", text)
