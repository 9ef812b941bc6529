# shardbudget: every target sets up what it needs from nothing.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed

.PHONY: venv demo test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	# torch pinned: 2.13.0 is a local CPU build here; any other spec may pull a multi-GB CUDA build
	$(PIP) install --quiet "torch==2.13.0"
	$(PIP) install --quiet -e ".[dev,report,measure]"
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/shardbudget demo

test: $(STAMP)
	bash scripts/install-chromium.sh || echo "chromium not installed: browser tests will be skipped"
	$(PY) -m pytest -q -p no:cacheprovider tests; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest ran no tests: failing" >&2; exit 1; fi; exit $$rc

bench: $(STAMP)
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
