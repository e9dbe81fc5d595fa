# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install demo lint test test-long test-compat test-all clean postgres docs

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,browser,figures,postgres,peers,dask]'
	touch $(STAMP)

# System-wide packages from Debian, installed as root with apt-get, which may also upgrade
# packages they depend on: said before it happens. SYSTEM_PACKAGES=no installs none (their
# tests are then skipped, each with its reason).
SYSTEM_PACKAGES ?= yes
define apt_install
	@if [ "$(SYSTEM_PACKAGES)" != no ] && command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		echo "make: installing Debian's $(1) system-wide with apt-get (apt may upgrade packages it depends on; SYSTEM_PACKAGES=no skips it)"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(1) >/dev/null) \
			|| echo "make: $(1) could not be installed ($(2) will be skipped)"; \
	else echo "make: $(1) not installed ($(2) will be skipped)"; fi
endef

# Debian's Chromium drives the browser tests and PNG export (Playwright never downloads a browser).
CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	$(call apt_install,chromium,the browser tests)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/optuna-boxcox demo

# The CI-sized suite: every behaviour, small versions of the long reproduction runs.
# Debian's PostgreSQL server for the multi-worker tests (they start a throw-away one on loopback).
PG_CTL := $(firstword $(wildcard /usr/lib/postgresql/*/bin/pg_ctl))
postgres:
ifeq ($(PG_CTL),)
	$(call apt_install,postgresql,the PostgreSQL tests)
endif

# ruff's lint rules and formatting (configured in pyproject.toml); part of `make test`.
lint: $(STAMP)
	$(VENV)/bin/ruff check optuna_boxcox tests examples hub
	$(VENV)/bin/ruff format --check optuna_boxcox tests examples hub

# One pytest worker per core (pytest-xdist), each test file on one worker, in order.
XDIST := -n auto --dist loadfile

test: $(STAMP) $(CHROMIUM) postgres lint
	$(PY) -m pytest -m "not slow and not long" -q $(XDIST)
	$(MAKE) --no-print-directory test-compat

# The checks of half a minute and more each (killed workers, signals, PostgreSQL, the presets'
# recorded trials, benchmarks): CI runs them after `make test` (.ci/run).
test-long: $(STAMP) $(CHROMIUM) postgres
	$(PY) -m pytest -m "long and not slow" -q $(XDIST)

# The lowest Optuna and scikit-learn the package claims (pyproject.toml), in a second virtual
# environment: the tests of everything that uses their internals (storage, bulk reads and writes,
# samplers, the runner, scikit-learn's private API and checks, the SGD port).
LOWEST := "optuna==4.2.0" "scikit-learn==1.6.0" "pytest<10"
COMPAT := .venv-compat
COMPAT_STAMP := $(COMPAT)/.installed
COMPAT_TESTS := tests/storage/test_read.py tests/storage/test_storage.py tests/runner/test_runner.py \
	tests/runner/test_persist.py tests/samplers/test_paper_samplers.py \
	tests/samplers/test_sampler_contract.py tests/runner/test_trial_times.py \
	tests/objective/test_objective.py tests/objective/test_identity.py tests/numerics/test_sgd.py \
	tests/transform/test_transformer.py tests/estimator/test_classifier.py tests/estimator/test_guard.py \
	tests/objective/test_evaluators.py tests/estimator/test_sklearn_checks.py \
	tests/storage/test_postgres.py tests/hub/test_coordinate_search_hub.py \
	tests/samplers/test_baselines.py tests/storage/test_read_only.py \
	tests/package/test_optuna_internals.py tests/objective/test_logistic_scorer.py
$(COMPAT_STAMP): pyproject.toml
	test -x $(COMPAT)/bin/python || $(PYTHON) -m venv $(COMPAT)
	$(COMPAT)/bin/python -m pip install --quiet --upgrade pip
	$(COMPAT)/bin/python -m pip install --quiet -e '.[test,postgres]' $(LOWEST)
	touch $(COMPAT_STAMP)

test-compat: $(COMPAT_STAMP) postgres
	$(COMPAT)/bin/python -m pytest -m "not slow" -q -p no:cacheprovider $(XDIST) $(COMPAT_TESTS) \
		-k "not n_trials and not killed_at_random"

# Everything, including the full-scale runs marked slow.
test-all: $(STAMP) $(CHROMIUM) postgres
	$(PY) -m pytest -m "slow or not slow" -q

# The documentation site: docs/_build/html/index.html (Sphinx, warnings are errors). The gallery
# runs examples/plot_*.py; its thumbnails need Chromium (without it they are placeholders).
DOCS_STAMP := $(VENV)/.installed-docs
$(DOCS_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install --quiet -e '.[docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	$(VENV)/bin/sphinx-build -W --keep-going -b html docs docs/_build/html

clean:
	rm -rf $(VENV) $(COMPAT) build *.egg-info .pytest_cache
