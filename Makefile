# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install demo test test-all clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/optuna-boxcox demo

# The CI-sized suite: every behaviour, small versions of the long reproduction runs.
test: $(STAMP)
	$(PY) -m pytest -m "not slow" -q

# Everything, including the full-scale runs marked slow.
test-all: $(STAMP)
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
