"""An LLM critic that confirms or rejects contradiction candidates (optional).

Speaks the OpenAI-compatible chat-completions protocol (``POST {base_url}/chat/completions``),
which a local Ollama, llama.cpp server or vLLM also speak, with the standard library only.
The prompt asks a critic for a JSON verdict; anything unusable (timeout, HTTP error, no
JSON) gives ``None``, which the detector treats as "no decision", never as a contradiction.

Example:
    >>> j = Judge("http://127.0.0.1:11434/v1", model="llama3.1")      # doctest: +SKIP
    >>> j.verdict("Works at Google", "I just joined Stripe")           # doctest: +SKIP
    (True, 0.9, 'new employer replaces the old one')
"""
from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request

DEFAULT_TIMEOUT = 30.0
DEFAULT_MODEL = "llama3.1"
SYSTEM_PROMPT = (
    "You are a strict critic checking an AI assistant's long-term memory about one person. "
    "You get an OLDER memory and a NEWER statement about the same person. Decide whether the "
    "NEWER statement shows that the OLDER memory is no longer true (outdated, replaced, ended "
    "or wrong). Answer false when the newer statement restates it, adds to it, is about another "
    "person, is a plan, wish, question or hypothetical, or is a one-off exception or temporary "
    "stay. When unsure, answer false. Reply with JSON only: "
    '{"contradiction": true|false, "confidence": 0.0-1.0, "reason": "<at most 15 words>"}'
)


class Judge:
    """A chat-completions client asking one question per candidate pair."""

    def __init__(self, base_url: str, model: str = DEFAULT_MODEL, api_key_env: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, min_confidence: float = 0.5):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key_env = api_key_env          # the *name* of an env var; the key is never stored
        self.timeout = timeout
        self.min_confidence = min_confidence
        self.calls = 0
        self.errors: list[str] = []

    def verdict(self, older: str, newer: str) -> tuple[bool, float, str] | None:
        """(contradiction?, confidence, reason), or None when the judge gave no usable answer."""
        body = {
            "model": self.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": f"OLDER memory: {older}\nNEWER statement: {newer}"},
            ],
        }
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        req = urllib.request.Request(self.url, data=json.dumps(body).encode(), headers=headers,
                                     method="POST")
        self.calls += 1
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                payload = json.loads(resp.read().decode("utf-8", "replace"))
            content = payload["choices"][0]["message"]["content"]
        except (urllib.error.URLError, OSError, ValueError, KeyError, IndexError, TypeError) as exc:
            self.errors.append(f"judge request failed: {type(exc).__name__}: {exc}")
            return None
        return self.parse(content)

    def parse(self, content: str) -> tuple[bool, float, str] | None:
        """Read the critic's JSON (also when wrapped in prose or a code fence)."""
        m = re.search(r"\{.*\}", content or "", re.S)
        if not m:
            return None
        try:
            data = json.loads(m.group(0))
        except ValueError:
            return None
        flag = data.get("contradiction")
        if not isinstance(flag, bool):
            return None
        try:
            conf = float(data.get("confidence", 0.7))
        except (TypeError, ValueError):
            conf = 0.7
        conf = max(0.0, min(1.0, conf))
        reason = str(data.get("reason") or "")[:200]
        if flag and conf < self.min_confidence:
            flag = False
        return flag, round(conf, 3), ("judge: " + reason) if reason else "judge: contradiction"
