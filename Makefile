# shardbudget: every target sets up what it needs from nothing.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
RUFF   := $(VENV)/bin/ruff
STAMP  := $(VENV)/.installed
# pytest caches its rewritten test modules as bytecode; a shell that sets PYTHONDONTWRITEBYTECODE
# (some workplaces do) makes every run rewrite them again, ~10 s of `make check`.
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest -q -p no:cacheprovider

.PHONY: venv demo lint check test bench docs clean

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

# The demo writes into build/, make's own folder (`make clean` removes it): a report.html of yours, in
# this folder or anywhere else, is never overwritten. --force replaces only the previous demo's file.
demo: $(STAMP)
	@mkdir -p build
	$(VENV)/bin/shardbudget demo --out build/report.html --force
	@echo "make demo: the report is build/report.html (make's own folder; no file of yours was touched)"

# Static checks: ruff's lint rules and its format (pyproject.toml), on the whole tree.
lint: $(STAMP)
	$(RUFF) check .
	$(RUFF) format --check .

# The fast loop, under a minute: the static checks and the unit tests but the slow ones
# (tests/conftest.py: the tiers and SLOW_UNIT).
check: lint
	$(PYTEST) -m "unit and not slow" tests/unit; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest ran no tests: failing" >&2; exit 1; fi; exit $$rc

# Everything, from nothing: the static checks, then every tier (unit, integration, validation,
# browser, slow). CI runs this (.ci/run).
test: lint
	bash scripts/install-chromium.sh || echo "chromium not installed: browser tests will be skipped"
	$(PYTEST) tests; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest ran no tests: failing" >&2; exit 1; fi; exit $$rc

# The benchmarks (never part of make test); their results become docs/accuracy.md and
# docs/benchmarks.md (scripts/bench_docs.py), whether or not every target is met.
bench: $(STAMP)
	$(PY) benchmarks/run_all.py; rc=$$?; \
	$(PY) scripts/bench_docs.py snapshot benchmarks/results.json && $(PY) scripts/bench_docs.py update || exit 1; \
	exit $$rc

# The generated parts of the docs: the examples' outputs, the screenshots, the benchmark pages.
docs: $(STAMP)
	$(PY) scripts/readme.py update
	$(PY) scripts/screenshots.py
	$(PY) scripts/bench_docs.py update

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
