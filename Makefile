# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install demo lint test test-all clean postgres

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,browser,figures,postgres]'
	touch $(STAMP)

# Debian's Chromium drives the browser tests and PNG export (Playwright never downloads a browser).
CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] && (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) || echo "chromium not installed: browser tests will be skipped"

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/optuna-boxcox demo

# The CI-sized suite: every behaviour, small versions of the long reproduction runs.
# Debian's PostgreSQL server for the multi-worker tests (they start a throw-away one on loopback).
PG_CTL := $(firstword $(wildcard /usr/lib/postgresql/*/bin/pg_ctl))
postgres:
	@test -n "$(PG_CTL)" || (command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] && (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql) || echo "postgresql not installed: its tests will be skipped")

# ruff's lint rules and formatting (configured in pyproject.toml); part of `make test`.
lint: $(STAMP)
	$(VENV)/bin/ruff check optuna_boxcox tests examples
	$(VENV)/bin/ruff format --check optuna_boxcox tests examples

test: $(STAMP) $(CHROMIUM) postgres lint
	$(PY) -m pytest -m "not slow" -q

# Everything, including the full-scale runs marked slow.
test-all: $(STAMP) $(CHROMIUM) postgres
	$(PY) -m pytest -m "slow or not slow" -q

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
