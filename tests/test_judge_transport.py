"""The judge's transport against a local HTTP/1.1 server speaking the chat-completions
protocol: retries with backoff on 429/5xx, one kept-alive connection, batched questions,
and verdicts cached in the overlay so a later sync never asks again."""
from __future__ import annotations

import json
import re
import sqlite3
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memwatch_overlay.overlay.detect.detector import Detector, FactView
from memwatch_overlay.overlay.detect.judge import Judge
from memwatch_overlay.overlay.engine import sync as sync_module
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.rules.config import load_config

from storegen import write_config
from test_sync_contradictions import AS_OF


class _Critic(BaseHTTPRequestHandler):
    """Keeps connections open (HTTP/1.1). Says "contradiction" when the newer statement
    names Stripe; answers a numbered batch with a JSON array; fails on demand."""

    protocol_version = "HTTP/1.1"
    requests: list = []
    ports: set = set()
    failures: list = []             # statuses to answer with before answering properly

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        cls = type(self)
        cls.requests.append(body)
        cls.ports.add(self.client_address[1])
        if cls.failures:
            status = cls.failures.pop(0)
            self.send_response(status)
            if status == 429:
                self.send_header("Retry-After", "0.01")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        user = body["messages"][-1]["content"]
        pairs = re.findall(r"NEWER statement: (.*)", user)
        verdicts = [{"id": i + 1, "contradiction": "Stripe" in p, "confidence": 0.9, "reason": "r"}
                    for i, p in enumerate(pairs)]
        content = json.dumps(verdicts if user.startswith("PAIR 1") else verdicts[0])
        out = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *a):
        pass


@pytest.fixture
def server():
    _Critic.requests, _Critic.ports, _Critic.failures = [], set(), []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Critic)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def _judge(url: str, **kw) -> tuple[Judge, list]:
    j = Judge(url, timeout=5, **kw)
    waits: list = []
    j.sleep = waits.append
    return j, waits


def test_429_and_5xx_are_retried_with_backoff(server):
    j, waits = _judge(server, backoff=0.2)
    _Critic.failures = [429, 503]
    assert j.verdict("Works at Google", "I joined Stripe") == (True, 0.9, "judge: r")
    assert j.calls == 3 and waits == [0.01, 0.4]        # Retry-After, then the doubled backoff
    _Critic.failures = [500, 500, 500, 500]
    assert j.verdict("Works at Google", "I joined Meta") is None     # gives up after `retries`
    assert j.calls == 3 + 4 and "HTTP 500" in j.errors[-1]
    _Critic.failures = [400]
    assert j.verdict("Works at Google", "I joined Canva") is None    # a client error is final
    assert j.calls == 8


def test_one_connection_serves_every_question(server):
    j, _ = _judge(server)
    for company in ("Stripe", "Meta", "Canva", "Grab"):
        assert j.verdict("Works at Google", f"I joined {company}") is not None
    assert len(_Critic.requests) == 4 and len(_Critic.ports) == 1
    j.close()


def test_candidates_go_in_batches_and_are_never_asked_twice(server):
    j, _ = _judge(server, batch_size=3)
    pairs = [("Works at Google", f"I joined {c}") for c in ("Stripe", "Meta", "Canva", "Grab", "Adyen")]
    assert j.prefetch(pairs) == 5
    assert len(_Critic.requests) == 2                # a batch of 3, a batch of 2
    assert [j.verdict(o, n) for o, n in pairs][0] == (True, 0.9, "judge: r")
    assert len(_Critic.requests) == 2                # all five known: nothing asked again
    assert j.prefetch(pairs) == 0 and len(_Critic.requests) == 2


def test_the_detector_batches_the_judges_candidates(server):
    j, _ = _judge(server)
    d = Detector(judge=j)
    olders = [FactView(f"o{i}", "u", None, f"Employed in fintech, team {i}", "employment", 0.0) for i in range(4)]
    found = d.compare(FactView("n", "u", None, "Stripe hired me, still fintech", "employment", 10.0), olders)
    assert sorted(c.older for c in found) == ["o0", "o1", "o2", "o3"]
    assert len(_Critic.requests) == 1                # four candidates, one request


class _SameTopic:
    """A stand-in embedder (no model, so nothing is stored): every pair is similar, so the
    judge decides whatever the rules leave open."""

    def similarities(self, text, others):
        return [0.9 for _ in others]


def test_verdicts_are_kept_in_the_overlay(tmp_path, server, monkeypatch):
    """A second sync of the same store with a fresh judge asks nothing: the overlay remembers.
    (The facts are made to look changed by rewriting their content hashes behind the sync's
    back, which a recorded source snapshot does not see: snapshots are off here.)"""
    monkeypatch.setattr(sync_module, "SNAPSHOTS", False)
    db = tmp_path / "bot.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, user_id TEXT, kind TEXT, fact_key TEXT, "
                 "content TEXT, created_at TEXT)")
    conn.executemany("INSERT INTO memories (user_id, kind, content, created_at) VALUES (?, ?, ?, ?)",
                     [("u1", "employment", "Employed in fintech", "2025-01-01 10:00:00"),
                      ("u1", "employment", "Fintech is where I work, says my Stripe badge", "2026-03-01 10:00:00"),
                      ("u1", "general", "Likes jazz", "2026-04-01 10:00:00")])
    conn.commit()
    conn.close()
    cfg = load_config(write_config(tmp_path, db))
    asked = []
    for run in range(2):
        j, _ = _judge(server)
        with OverlayStore(tmp_path / "overlay.db") as overlay:
            det = Detector(embedder=_SameTopic(), judge=j)
            stats = SyncEngine(overlay, cfg, detector=det).sync(cfg.sources[0], as_of=AS_OF, full=True)
            asked.append((j.calls, overlay.verdict_count(j.model), stats.contradictions))
            if run == 0:
                overlay.conn.execute("UPDATE facts SET content_hash = 'x'")     # judged again next time
    assert asked[0][0] >= 1 and asked[0][1] == 2 and asked[0][2] == 1   # two pairs met; Stripe outdates
    assert asked[1] == (0, 2, 1)
