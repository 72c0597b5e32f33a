# make demo : set up a venv with the core install and audit the bundled example store
# make test : set up a venv with every extra (torch CPU build for embeddings) and run the tests
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
TORCH_VERSION ?= 2.13.0

.PHONY: demo test typecheck setup setup-all clean

$(VENV)/bin/python:
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip

$(VENV)/.core: $(VENV)/bin/python pyproject.toml
	$(PIP) install -q -e '.[dev]'
	touch $@

# torch first, pinned: a bare `torch` requirement would pull a multi-GB CUDA build.
$(VENV)/.all: $(VENV)/.core
	$(PIP) install -q torch==$(TORCH_VERSION)
	$(PIP) install -q -e '.[dev,postgres,embeddings,mcp,fast,train,test-integrations]'
	bash tests/setup_chromium.sh
	touch $@

setup: $(VENV)/.core
setup-all: $(VENV)/.all

demo: $(VENV)/.core
	@echo "== zero-config audit of a LangGraph store (preset detected) =="
	$(VENV)/bin/memwatch-overlay audit tests/fixtures/agent-stores/langgraph/langgraph_store.sqlite \
		--as-of 2026-11-29T15:57:40Z --overlay $(VENV)/demo-overlay.db
	@echo "== audit with memwatch.toml (home-made table, custom rules, CI gate) =="
	-$(VENV)/bin/memwatch-overlay audit --config memwatch.toml --as-of 2026-11-29 --overlay $(VENV)/demo-overlay.db

test: $(VENV)/.all
	$(PY) -m pytest -q

# mypy through a link tree of the package-dir mapping (see tests/typecheck.py)
typecheck: $(VENV)/.core
	$(PY) tests/typecheck.py

clean:
	rm -rf $(VENV) .memwatch .pytest_cache
