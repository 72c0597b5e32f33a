"""The judge against a local HTTP server that speaks the chat-completions protocol."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memwatch_overlay.overlay.detect.detector import Detector, FactView
from memwatch_overlay.overlay.detect.judge import Judge


class _Critic(BaseHTTPRequestHandler):
    """Says "contradiction" when the newer statement mentions a new employer."""

    requests: list = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "body": body,
                                    "auth": self.headers.get("Authorization")})
        user = body["messages"][-1]["content"]
        if "garbage" in user:
            content = "I am not sure what you mean."
        elif "teapot" in user:
            self.send_response(500)
            self.end_headers()
            return
        else:
            flag = "Stripe" in user
            content = "Sure!\n```json\n" + json.dumps(
                {"contradiction": flag, "confidence": 0.9 if flag else 0.8,
                 "reason": "new employer" if flag else "same job"}) + "\n```"
        out = json.dumps({"id": "x", "object": "chat.completion",
                          "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                       "finish_reason": "stop"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *a):
        pass


@pytest.fixture
def server():
    _Critic.requests = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Critic)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_verdicts_over_http(server, monkeypatch):
    monkeypatch.setenv("MY_JUDGE_KEY", "sekret")
    j = Judge(server, model="tiny", api_key_env="MY_JUDGE_KEY", timeout=5)
    assert j.verdict("Works at Google", "I joined Stripe") == (True, 0.9, "judge: new employer")
    assert j.verdict("Works at Google", "Still at Google") == (False, 0.8, "judge: same job")
    req = _Critic.requests[0]
    assert req["path"] == "/v1/chat/completions" and req["body"]["model"] == "tiny"
    assert req["auth"] == "Bearer sekret"
    assert "Works at Google" in req["body"]["messages"][-1]["content"]
    assert req["body"]["messages"][0]["role"] == "system"


def test_unusable_answers_are_no_decision(server):
    j = Judge(server, timeout=5)
    assert j.verdict("a", "garbage") is None
    assert j.verdict("a", "teapot") is None
    assert j.errors and "HTTPError" in j.errors[-1]
    dead = Judge("http://127.0.0.1:9/v1", timeout=1)     # nothing listens on the discard port
    assert dead.verdict("a", "b") is None


class _SameTopic:
    """A stand-in embedder: every pair is similar, so only the judge decides."""

    model_name = "fake"

    def similarities(self, text, others):
        return [0.9 for _ in others]


def test_detector_asks_the_judge_for_undecided_candidates(server):
    j = Judge(server, timeout=5)
    # without the pair model, which since stop 35's refit reads "Stripe hired me" as a new
    # employer on its own: the pairs it leaves undecided are the judge's
    d = Detector(embedder=_SameTopic(), judge=j, learned=False)
    old = FactView("o", "u", None, "Employed in fintech", "employment", 0.0)
    [c] = d.compare(FactView("n", "u", None, "Stripe hired me last month", "employment", 10.0), [old])
    assert (c.older, c.kind, c.confidence, c.evidence) == ("o", "judge", 0.9, "judge: new employer")
    assert d.compare(FactView("n2", "u", None, "Fintech is fun", "employment", 10.0), [old]) == []
    # a pair the rules already decide never reaches the judge
    calls = j.calls
    rule_old = FactView("o2", "u", None, "Lives in Rome", "location", 0.0)
    [c] = d.compare(FactView("n3", "u", None, "We moved to Milan.", "location", 10.0), [rule_old])
    assert c.kind == "value" and j.calls == calls


def test_a_judge_without_embeddings_sees_facts_sharing_a_word(server):
    j = Judge(server, timeout=5)
    d = Detector(judge=j)
    old = FactView("o", "u", None, "Employed in fintech", "employment", 0.0)
    unrelated = FactView("o2", "u", None, "Likes jazz", "preference", 0.0)
    [c] = d.compare(FactView("n", "u", None, "Stripe hired me, still fintech", "employment", 10.0),
                    [old, unrelated])
    assert (c.older, c.kind) == ("o", "judge")
    assert j.calls == 1                   # "Likes jazz" shares nothing: never sent
