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

# The files `ruff format --check` holds to the format of pyproject.toml. The rest of the tree is
# formatted in one commit of its own once the branches open at issue 35 are merged; then this list
# goes and the check covers the whole tree.
FORMATTED := benchmarks/bench_cli.py benchmarks/known_defects.py src/shardbudget/engines/releases.py src/shardbudget/cli/engines.py src/shardbudget/decide/engine_diff.py scripts/bench_docs.py scripts/readme.py scripts/screenshots.py \
	src/shardbudget/__main__.py src/shardbudget/comm/__init__.py src/shardbudget/comm/nccl_graph.py \
	src/shardbudget/decide/__init__.py src/shardbudget/defaults.py src/shardbudget/engines/release.py \
	src/shardbudget/engines/tuned.py src/shardbudget/errors.py src/shardbudget/fabric/__init__.py \
	src/shardbudget/measure/__init__.py src/shardbudget/measure/__main__.py \
	src/shardbudget/measure/analysis/__init__.py src/shardbudget/measure/harness/__init__.py \
	src/shardbudget/measure/logs/__init__.py src/shardbudget/measure/logs/serving.py \
	src/shardbudget/measure/logs/serving_formats.py src/shardbudget/decide/serving_check.py \
	src/shardbudget/decide/serving_causes.py src/shardbudget/report/serving_check.py src/shardbudget/report/fig_serving.py \
	src/shardbudget/model/layers.py src/shardbudget/report/__init__.py \
	src/shardbudget/step/__init__.py src/shardbudget/step/price_comm.py tests/conftest.py \
	tests/hooks/shardbudget_test_hooks.py tests/integration/test_readme.py tests/unit/test_bench_docs.py \
	tests/unit/test_routing.py tests/unit/test_tiers.py tests/unit/test_weight_scales.py \
	tests/validation/test_decode_measurements.py tests/validation/test_deepseek_hopper.py \
	tests/validation/test_fastest_plan.py tests/validation/test_serving_launch.py tests/validation/test_shm_prior.py \
	src/shardbudget/comm/moe_a2a.py tests/unit/test_moe_a2a.py tests/validation/test_deepep.py \
	src/shardbudget/decide/split_search.py tests/integration/test_deploy_splits.py tests/integration/test_moe_a2a_cli.py

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

# Static checks: ruff's lint rules (pyproject.toml) on the whole tree, its format on FORMATTED.
lint: $(STAMP)
	$(RUFF) check .
	$(RUFF) format --check $(FORMATTED)

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
