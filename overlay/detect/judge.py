"""An LLM critic that confirms or rejects contradiction candidates (optional).

Speaks the OpenAI-compatible chat-completions protocol (``POST {base_url}/chat/completions``),
which a local Ollama (``http://127.0.0.1:11434/v1``), llama.cpp server or vLLM also speak,
with the standard library only. The prompt asks a critic for a JSON verdict; anything
unusable (timeout, HTTP error, no JSON) gives ``None``, which the detector treats as "no
decision", never as a contradiction.

What makes it affordable on a whole store:

- one HTTP connection kept open (keep-alive) for every question of a run;
- retries with exponential backoff on 429 and 5xx (a ``Retry-After`` header is honoured, up
  to ``max_backoff``) and on a dropped connection; other errors are final;
- batching: ``prefetch(pairs)`` asks about up to ``batch_size`` pairs in one request (a
  numbered list, a JSON array back); an answer that does not parse falls back to one
  question per pair;
- a verdict cache keyed by model and pair: in memory, and in the overlay when a sync hands
  it one (``cache``, ``overlay/store/verdicts.py``), so a pair is never asked twice.

Example:
    >>> j = Judge("http://127.0.0.1:11434/v1", model="llama3.1")      # doctest: +SKIP
    >>> j.verdict("Works at Google", "I just joined Stripe")           # doctest: +SKIP
    (True, 0.9, 'judge: new employer replaces the old one')
"""
from __future__ import annotations

import http.client
import json
import os
import re
import time
import urllib.parse
from typing import Iterable, Protocol

from memwatch_overlay.overlay.detect.pair_keys import pair_key

DEFAULT_TIMEOUT = 30.0
DEFAULT_MODEL = "llama3.1"
DEFAULT_RETRIES = 3
DEFAULT_BACKOFF = 0.5          # seconds before the first retry; doubles each time
DEFAULT_MAX_BACKOFF = 8.0
DEFAULT_BATCH = 8              # pairs per request in prefetch()
_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
SYSTEM_PROMPT = (
    "You are a strict critic checking an AI assistant's long-term memory about one person. "
    "You get an OLDER memory and a NEWER statement about the same person. Decide whether the "
    "NEWER statement shows that the OLDER memory is no longer true (outdated, replaced, ended "
    "or wrong). Answer false when the newer statement restates it, adds to it, is about another "
    "person, is a plan, wish, question or hypothetical, or is a one-off exception or temporary "
    "stay. When unsure, answer false. Reply with JSON only: "
    '{"contradiction": true|false, "confidence": 0.0-1.0, "reason": "<at most 15 words>"}'
)
BATCH_PROMPT = (
    " You may get several numbered pairs: then reply with a JSON array holding one such object "
    'per pair, in order, each with its "id".'
)

Verdict = tuple[bool, float, str]


class VerdictStore(Protocol):
    """Where verdicts outlive a run (the overlay's `judge_verdicts` table)."""

    def get_verdicts(self, model: str, keys: list[str]) -> dict[str, Verdict]: ...

    def put_verdicts(self, model: str, rows: list[tuple[str, Verdict]]) -> None: ...


class _HTTPError(Exception):
    def __init__(self, status: int, reason: str, retry_after: float | None):
        super().__init__(f"HTTP {status} {reason}")
        self.status, self.retry_after = status, retry_after


class Judge:
    """A chat-completions client: one kept-alive connection, retries, batches, a verdict cache."""

    def __init__(self, base_url: str, model: str = DEFAULT_MODEL, api_key_env: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, min_confidence: float = 0.5,
                 retries: int = DEFAULT_RETRIES, backoff: float = DEFAULT_BACKOFF,
                 max_backoff: float = DEFAULT_MAX_BACKOFF, batch_size: int = DEFAULT_BATCH):
        self.url = base_url.rstrip("/") + "/chat/completions"
        parts = urllib.parse.urlsplit(self.url)
        self._scheme, self._netloc = parts.scheme, parts.netloc
        self._path = parts.path + (f"?{parts.query}" if parts.query else "")
        self.model = model
        self.api_key_env = api_key_env          # the *name* of an env var; the key is never stored
        self.timeout = timeout
        self.min_confidence = min_confidence
        self.retries, self.backoff, self.max_backoff = retries, backoff, max_backoff
        self.batch_size = max(1, batch_size)
        self.calls = 0                          # HTTP requests sent (retries included)
        self.asked = 0                          # pairs sent to the critic
        self.cache_hits = 0
        self.errors: list[str] = []
        self.cache: VerdictStore | None = None  # set by the block pass: the overlay's verdicts
        self._memo: dict[str, Verdict] = {}
        self._conn: http.client.HTTPConnection | None = None
        self.sleep = time.sleep                 # tests may replace it

    # ------------------------------------------------------------ public API
    def verdict(self, older: str, newer: str) -> Verdict | None:
        """(contradiction?, confidence, reason), or None when the judge gave no usable answer."""
        key = pair_key(older, newer)
        hit = self._cached([key]).get(key)
        if hit is not None:
            return hit
        content = self._ask([{"role": "system", "content": SYSTEM_PROMPT},
                             {"role": "user", "content": f"OLDER memory: {older}\nNEWER statement: {newer}"}])
        self.asked += 1
        found = self.parse(content) if content is not None else None
        if found is not None:
            self._remember([(key, found)])
        return found

    def prefetch(self, pairs: Iterable[tuple[str, str]]) -> int:
        """Ask about these (older, newer) pairs ahead of ``verdict``, ``batch_size`` per request;
        returns how many verdicts were learned. Pairs already known are not sent."""
        todo: dict[str, tuple[str, str]] = {}
        for older, newer in pairs:
            todo.setdefault(pair_key(older, newer), (older, newer))
        known = self._cached(list(todo))
        todo = {k: p for k, p in todo.items() if k not in known}
        learned = 0
        items = list(todo.items())
        for i in range(0, len(items), self.batch_size):
            chunk = items[i:i + self.batch_size]
            if len(chunk) == 1:
                continue                        # verdict() will ask it on its own
            lines = [f"PAIR {n + 1}\nOLDER memory: {o}\nNEWER statement: {w}" for n, (_, (o, w)) in enumerate(chunk)]
            content = self._ask([{"role": "system", "content": SYSTEM_PROMPT + BATCH_PROMPT},
                                 {"role": "user", "content": "\n\n".join(lines)}])
            self.asked += len(chunk)
            got = self.parse_many(content, len(chunk)) if content is not None else None
            if got is None:
                continue                        # verdict() falls back to one question per pair
            rows = [(k, v) for (k, _), v in zip(chunk, got) if v is not None]
            self._remember(rows)
            learned += len(rows)
        return learned

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # ------------------------------------------------------------ answers
    def parse(self, content: str) -> Verdict | None:
        """Read the critic's JSON (also when wrapped in prose or a code fence)."""
        data = _json_in(content, r"\{.*\}")
        return None if data is None else self._one(data)

    def parse_many(self, content: str, n: int) -> list[Verdict | None] | None:
        """The verdicts of a batched answer (a JSON array of n objects), or None."""
        data = _json_in(content, r"\[.*\]")
        if not isinstance(data, list) or len(data) != n:
            return None
        return [self._one(d) if isinstance(d, dict) else None for d in data]

    def _one(self, data: dict) -> Verdict | None:
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

    # ------------------------------------------------------------ cache
    def _cached(self, keys: list[str]) -> dict[str, Verdict]:
        out = {k: self._memo[k] for k in keys if k in self._memo}
        missing = [k for k in keys if k not in out]
        if missing and self.cache is not None:
            stored = self.cache.get_verdicts(self.model, missing)
            self._memo.update(stored)
            out.update(stored)
        self.cache_hits += len(out)
        return out

    def _remember(self, rows: list[tuple[str, Verdict]]) -> None:
        for k, v in rows:
            self._memo[k] = v
        if rows and self.cache is not None:
            self.cache.put_verdicts(self.model, rows)

    # ------------------------------------------------------------ HTTP
    def _ask(self, messages: list[dict]) -> str | None:
        """The assistant's reply to one chat-completions request, or None (error logged)."""
        body = json.dumps({"model": self.model, "temperature": 0, "messages": messages}).encode()
        headers = {"Content-Type": "application/json", "Connection": "keep-alive"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        delay = self.backoff
        for attempt in range(self.retries + 1):
            self.calls += 1
            try:
                payload = self._post(body, headers)
                return payload["choices"][0]["message"]["content"]
            except _HTTPError as exc:
                self.errors.append(f"judge request failed: HTTPError: {exc}")
                if exc.status not in _RETRY_STATUS or attempt == self.retries:
                    return None
                wait = exc.retry_after if exc.retry_after is not None else delay
            except (OSError, http.client.HTTPException) as exc:
                self.close()                    # a dropped connection: open a new one
                self.errors.append(f"judge request failed: {type(exc).__name__}: {exc}")
                if attempt == self.retries or isinstance(exc, ConnectionRefusedError):
                    return None
                wait = delay
            except (ValueError, KeyError, IndexError, TypeError) as exc:
                self.errors.append(f"judge request failed: {type(exc).__name__}: {exc}")
                return None
            self.sleep(min(self.max_backoff, wait))
            delay *= 2
        return None

    def _post(self, body: bytes, headers: dict) -> dict:
        if self._conn is None:
            cls = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
            self._conn = cls(self._netloc, timeout=self.timeout)
        self._conn.request("POST", self._path, body=body, headers=headers)
        resp = self._conn.getresponse()
        data = resp.read()
        if resp.getheader("Connection", "").lower() == "close" or resp.will_close:
            self.close()
        if resp.status >= 400:
            retry = resp.getheader("Retry-After")
            try:
                after = float(retry) if retry is not None else None
            except ValueError:
                after = None
            raise _HTTPError(resp.status, resp.reason, after)
        return json.loads(data.decode("utf-8", "replace"))


def _json_in(content: str | None, span: str):
    """The JSON value of the first match of ``span`` in an answer (prose around it), or None."""
    m = re.search(span, content or "", re.S)
    if not m:
        return None
    try:
        return json.loads(m.group(0))
    except ValueError:
        return None
