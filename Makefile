# shardbudget: every target sets up what it needs from nothing.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed

.PHONY: venv demo test bench clean

# Each step says what it does: the first run installs for a minute or two (pip's own progress shown).
$(STAMP): pyproject.toml
	@echo "[1/4] creating $(VENV) (once; later runs start at once)"
	$(PYTHON) -m venv $(VENV)
	@echo "[2/4] upgrading pip"
	$(PIP) install --quiet --upgrade pip
	@echo "[3/4] installing torch 2.13.0 (CPU build; the largest download)"
	# torch pinned: 2.13.0 is a local CPU build here; any other spec may pull a multi-GB CUDA build
	$(PIP) install --progress-bar on "torch==2.13.0"
	@echo "[4/4] installing shardbudget with its report, measure and test extras"
	$(PIP) install --progress-bar on -e ".[dev,report,measure]"
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/shardbudget demo --force

test: $(STAMP)
	bash scripts/install-chromium.sh || echo "chromium not installed: browser tests will be skipped"
	$(PY) -m pytest -q -p no:cacheprovider tests; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest ran no tests: failing" >&2; exit 1; fi; exit $$rc

bench: $(STAMP)
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
