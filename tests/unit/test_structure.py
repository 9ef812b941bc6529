"""The shape of the tree: packages that are layers, each importing only the layers below it (one
table, `LAYERS`), an import graph without cycles, small modules, short functions, imports at the
top of each module except the heavy optional libraries (kept lazy for start-up), and a
CONTRIBUTING.md whose map of the modules matches the tree."""

import ast
import fnmatch
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "shardbudget"
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60
STEP_MODULE_LINES = 250  # the step model's own modules (issue 18): price_ops, price_comm, compose
STEP_FUNCTION_LINES = 40
# Imported inside functions on purpose: heavy (torch, matplotlib, scipy) or optional (tomli_w, the
# click copy typer vendors on some versions, huggingface_hub for --download).
LAZY_OK = (
    "torch",
    "matplotlib",
    "scipy",
    "tomli_w",
    "typer._click",
    "click",
    "huggingface_hub",
    ".worker",  # measure/harness/worker.py is the one rank's torch code
    # modules one command alone uses, imported inside that command so that `--help` and the
    # other commands start without them (`plan` and `deploy` start-up; benchmarks/deploy_speed.py)
    "..decide.deploy",
    "..decide.disagg",
    "..decide.launch",
    "..decide.tail_plan",
    "..fabric.topo_profile",
    "..measure",
    "..report.html",
    "..report.demo",
    "..report",
    # what the cached built-in data makes unneeded (datacache: `plan` start-up, benchmarks/startup.py):
    # the TOML reader builds it, atomic writes it (json, tempfile); units reads and prints the common
    # forms itself (quantiphy for the rest: tests/unit/test_units_quick.py)
    "tomllib",
    ".atomic",
    "quantiphy",
    "..atomic",  # read_user_file: a user's --catalog or config.json only, not the built-in data on `plan`'s path
    "..step.served",  # plan --input-len/--output-len alone
    ".cli_tables",
)  # an engine preset's [cli] records: deploy's; plan reads the preset without them


def _modules() -> dict[str, ast.Module]:
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC.parent).with_suffix("")
        parts = list(rel.parts[:-1]) if rel.name == "__init__" else list(rel.parts)
        out[".".join(parts)] = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return out


def _imported(module: str, node: ast.AST, is_package: bool) -> list[str]:
    """Module names an import statement may refer to, relative imports resolved: `from .x import y`
    gives x and x.y (y may be a submodule or a name in x)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    target = node.module or ""
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    return [target] + [f"{target}.{a.name}" for a in node.names]


def _graph() -> dict[str, set[str]]:
    """Module -> the project modules its top-level statements import. An edge to a package that
    holds the importing module is left out: Python has initialised it before the module runs."""
    mods = _modules()
    packages = {name for name in mods if (SRC.parent / Path(*name.split(".")) / "__init__.py").exists()}
    graph: dict[str, set[str]] = {}
    for name, tree in mods.items():
        edges = set()
        for node in tree.body:  # module-level imports only: function-level ones run later
            for target in _imported(name, node, name in packages):
                ancestor = name.startswith(target + ".")
                if target in mods and target != name and not ancestor:
                    edges.add(target)
        graph[name] = edges
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph[n]):
            if state.get(m) == 1:
                return stack[stack.index(m) :] + [m]
            if m not in state and (found := visit(m)):
                return found
        state[n] = 2
        stack.pop()
        return None

    for n in sorted(graph):
        if n not in state and (found := visit(n)):
            return found
    return None


def test_import_graph_has_no_cycle():
    graph = _graph()
    assert graph["shardbudget.step.compose"] >= {
        "shardbudget.model",
        "shardbudget.step.price_comm",
    }  # the graph is real
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


# --- the layers -----------------------------------------------------------------------------
#
# Each package of src/shardbudget is a layer; it may import the layers listed for it, and the ground
# floor (the root modules units, dtypes, errors, atomic, datacache, datafile and the package itself),
# and nothing else.
# Every import counts, those inside functions too.

GROUND = "ground"
LAYERS = {
    GROUND: set(),
    "fabric": {GROUND},
    "comm": {GROUND, "fabric"},
    "model": {GROUND, "comm"},
    "engines": {GROUND, "fabric", "comm"},
    "measure": {GROUND, "fabric", "comm"},
    "step": {GROUND, "fabric", "comm", "model", "engines", "measure"},
    "decide": {GROUND, "fabric", "comm", "model", "engines", "measure", "step"},
    "report": {GROUND, "fabric", "comm", "model", "engines", "measure", "step", "decide"},
    "cli": {GROUND, "fabric", "comm", "model", "engines", "measure", "step", "decide", "report"},
    # the public measurements read, the catalog fitted on them and the model validated against them:
    # run by `python -m shardbudget.calibrate`, the tests and the benchmarks; no command imports it
    "calibrate": {GROUND, "fabric", "comm", "model", "engines", "step"},
}
GROUND_MODULES = {"units", "dtypes", "errors", "atomic", "datacache", "datafile", "defaults", "quoting"}
ENTRY_MODULES = {"__init__", "__main__"}  # the package's face (PEP 562 names) and `python -m shardbudget`


def _layer(module: str) -> str:
    """The layer of a dotted module name under shardbudget (`shardbudget.step.compose` -> step)."""
    parts = module.split(".")[1:]
    if not parts or (len(parts) == 1 and parts[0] in GROUND_MODULES):
        return GROUND
    if len(parts) == 1:
        return parts[0]
    return parts[0]


def _all_imports() -> dict[str, set[str]]:
    """Module -> every project module it imports, anywhere in its code (function-level too)."""
    mods = _modules()
    packages = {name for name in mods if (SRC.parent / Path(*name.split(".")) / "__init__.py").exists()}
    out = {}
    for name, tree in mods.items():
        out[name] = {t for node in ast.walk(tree) for t in _imported(name, node, name in packages) if t in mods}
    return out


def _layer_breaches(imports: dict[str, set[str]]) -> list[str]:
    breaches = []
    for module, targets in sorted(imports.items()):
        if module.split(".")[-1] in ENTRY_MODULES and module.count(".") == 1:
            continue
        own = _layer(module)
        for target in sorted(targets):
            other = _layer(target)
            if other != own and other not in LAYERS[own]:
                breaches.append(f"{module} ({own}) imports {target} ({other})")
    return breaches


def test_every_package_is_a_layer_in_the_table():
    tops = {p.name for p in SRC.iterdir() if (p / "__init__.py").exists()}
    assert tops == set(LAYERS) - {GROUND}, (
        f"packages without a row in LAYERS (or rows without a package): {tops ^ (set(LAYERS) - {GROUND})}"
    )
    root_modules = {p.stem for p in SRC.glob("*.py")} - ENTRY_MODULES
    assert root_modules == GROUND_MODULES, (
        f"modules at the root that are not the ground floor: {root_modules - GROUND_MODULES}"
    )
    for layer, allowed in LAYERS.items():  # a table that is itself one way: no layer allows one that allows it
        assert all(layer not in LAYERS[a] for a in allowed), f"{layer} and one of {allowed} allow each other"


def test_each_layer_imports_only_the_layers_below_it():
    breaches = _layer_breaches(_all_imports())
    assert not breaches, "imports against LAYERS:\n" + "\n".join(breaches)


def test_the_layer_check_catches_an_upward_import():
    imports = _all_imports()
    assert imports["shardbudget.decide.planner"] & {"shardbudget.step.scenario"}  # the table is fed real edges
    imports["shardbudget.model.ops"] = imports["shardbudget.model.ops"] | {"shardbudget.step.compose"}
    imports["shardbudget.units"] = imports["shardbudget.units"] | {"shardbudget.fabric.hardware"}
    assert _layer_breaches(imports) == [
        "shardbudget.model.ops (model) imports shardbudget.step.compose (step)",
        "shardbudget.units (ground) imports shardbudget.fabric.hardware (fabric)",
    ]


# --- views only read (issue 32) ------------------------------------------------------------
#
# The report, its figures and its tables read the records a request produced; they never price. So no
# module under report/ imports step/ (the step model), nor any function that prices a collective or
# a step or answers a request: those run in decide/ (report_answers, report_grid, measured) and the
# views get their records.

VIEWS = "shardbudget.report"
PRICERS = {
    "shardbudget.comm.collectives.sweep",
    "shardbudget.comm.collectives.collective_cost",
    "shardbudget.comm.collectives.make_group",
    "shardbudget.comm.collectives.candidates",
    "shardbudget.decide.planner.plan",
    "shardbudget.decide.planner.required_fabric",
    "shardbudget.decide.deploy.deploy",
    "shardbudget.decide.deploy.budget_options",
    "shardbudget.decide.capacity",
    "shardbudget.decide.questions.explain",
    "shardbudget.decide.compare.compare_systems",
    "shardbudget.decide.report_answers.answer_report",
    "shardbudget.decide.report_answers.demo_answers",
    "shardbudget.decide.report_answers.fabric_curve",
    "shardbudget.decide.report_grid.answer_grid",
    "shardbudget.decide.report_grid.deploy_options",
    "shardbudget.decide.report_grid.rejudge",
    "shardbudget.decide.measured.measured_entry",
    "shardbudget.decide.measured.predict_samples",
}


def _pricing_imports(imports: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} imports {target}"
        for module, targets in imports.items()
        if module == VIEWS or module.startswith(VIEWS + ".")
        for target in targets
        if target == "shardbudget.step" or target.startswith("shardbudget.step.") or target in PRICERS
    )


def _every_import() -> dict[str, set[str]]:
    """Module -> every dotted name its imports name (module or module.attribute), anywhere in it."""
    mods = _modules()
    packages = {name for name in mods if (SRC.parent / Path(*name.split(".")) / "__init__.py").exists()}
    return {
        name: {t for node in ast.walk(tree) for t in _imported(name, node, name in packages)}
        for name, tree in mods.items()
    }


def test_no_view_imports_the_step_model_or_a_pricer():
    found = _pricing_imports(_every_import())
    assert not found, "report/ prices (move it to decide/ and hand the view a record):\n" + "\n".join(found)


def test_the_view_check_catches_a_view_that_prices():
    imports = _every_import()
    assert imports["shardbudget.report.grid"]  # the check is fed real imports
    imports["shardbudget.report.grid"] = imports["shardbudget.report.grid"] | {"shardbudget.decide.planner.plan"}
    imports["shardbudget.report.sections"] = imports["shardbudget.report.sections"] | {"shardbudget.step.compose"}
    assert _pricing_imports(imports) == [
        "shardbudget.report.grid imports shardbudget.decide.planner.plan",
        "shardbudget.report.sections imports shardbudget.step.compose",
    ]


# measure/ is three subpackages by role (issue 32, item 6); each may import the parts listed for it,
# the package's own __init__ / __main__ any of them.
MEASURE_PARTS = {
    "logs": set(),  # reading logs: knows nothing of who measured or what is done with them
    "harness": set(),  # measuring: what it writes is read back by logs like any other log
    "analysis": {"logs"},  # fit and check: measurements (read by logs) against the model
}


def _measure_part(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[1] == "measure" else None


def _measure_breaches(imports: dict[str, set[str]]) -> list[str]:
    breaches = []
    for module, targets in sorted(imports.items()):
        own = _measure_part(module)
        for target in sorted(targets):
            other = _measure_part(target)
            if own and other and other != own and other not in MEASURE_PARTS[own]:
                breaches.append(f"{module} ({own}) imports {target} ({other})")
    return breaches


def test_measure_is_its_parts_and_each_imports_only_those_listed():
    measure = SRC / "measure"
    parts = {p.name for p in measure.iterdir() if (p / "__init__.py").exists()}
    assert parts == set(MEASURE_PARTS), (
        f"measure/ subpackages without a row in MEASURE_PARTS: {parts ^ set(MEASURE_PARTS)}"
    )
    assert {p.name for p in measure.glob("*.py")} == {"__init__.py", "__main__.py"}, "a module outside measure's parts"
    imports = _all_imports()
    assert imports["shardbudget.measure.analysis.check"] & {"shardbudget.measure.logs.read"}  # fed real edges
    breaches = _measure_breaches(imports)
    assert not breaches, "imports against MEASURE_PARTS:\n" + "\n".join(breaches)
    imports["shardbudget.measure.logs.read"] = imports["shardbudget.measure.logs.read"] | {
        "shardbudget.measure.analysis.fit"
    }
    assert _measure_breaches(imports) == [
        "shardbudget.measure.logs.read (logs) imports shardbudget.measure.analysis.fit (analysis)"
    ]


def test_a_cycle_is_found_when_there_is_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def wrapped_lines(text: str) -> set[int]:
    """The physical lines that continue a bracketed expression (the first token on the line sits
    inside an open bracket): a formatter's choice, not the code's size, so the size rules skip them
    and hold the same before and after `ruff format`."""
    depth, wrapped, seen = 0, set(), set()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        line = tok.start[0]
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT) and line not in seen:
            seen.add(line)
            if depth > 0:
                wrapped.add(line)
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
    return wrapped


def sized(first: int, last: int, wrapped: set[int]) -> int:
    """Lines first..last, those that only wrap an expression not counted."""
    return last - first + 1 - sum(1 for n in wrapped if first <= n <= last)


def test_a_wrapped_call_is_one_line_of_size():
    one = "def f():\n    return g(1, 2, 3)\n"
    four = "def f():\n    return g(\n        1,\n        2, 3\n    )\n"
    assert sized(1, 2, wrapped_lines(one)) == sized(1, 5, wrapped_lines(four)) == 2


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_module_and_function_sizes(path):
    """Lines of a module and of each function, a bracketed expression's wrapped lines not counted."""
    text = path.read_text(encoding="utf-8")
    step = path.parent.name == "step"
    max_lines, max_fn = (STEP_MODULE_LINES, STEP_FUNCTION_LINES) if step else (MAX_MODULE_LINES, MAX_FUNCTION_LINES)
    wrapped = wrapped_lines(text)
    lines = sized(1, len(text.splitlines()), wrapped)
    assert lines <= max_lines, f"{path.name}: {lines} lines"
    long = [
        (n.name, sized(n.lineno, n.end_lineno, wrapped))
        for n in ast.walk(ast.parse(text))
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and sized(n.lineno, n.end_lineno, wrapped) > max_fn
    ]
    assert not long, f"{path.name}: functions over {max_fn} lines: {long}"


CLI_LAZY_OK = ("..", "rich.", ".app")
"""A command module (cli/) imports the library, and rich, when its command runs: `--help` and every
other command start without them (issue 24: help within 0.30 s). Its top imports typer and cli.args.
cli/__init__.py imports the app (typer) inside console_main, after tuning the collector."""


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_imports_are_at_the_top(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lazy_ok = LAZY_OK + (CLI_LAZY_OK if path.parent.name == "cli" else ())
    inner = []
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    base = "." * node.level + (node.module or "")
                    names = [base] if node.module else [base + a.name for a in node.names]
                else:
                    continue
                inner += [f"{fn.name}: {n}" for n in names if not n.startswith(lazy_ok)]
    assert not inner, f"imports inside functions (move them to the top): {inner}"


@pytest.mark.parametrize("path", sorted((SRC / "cli").glob("*.py")), ids=lambda p: p.name)
def test_command_modules_import_no_library_at_start_up(path):
    """Top-level imports of a command module: typer, the standard library, cli/ itself (args,
    command_io, options, app) and the ground floor's defaults; the library and rich only inside the commands."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    heavy = []
    for node in tree.body:
        # errors: difflib only; defaults: constants, no imports
        if isinstance(node, ast.ImportFrom) and node.level >= 2 and node.module not in ("errors", "defaults"):
            heavy.append("." * node.level + (node.module or ""))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            heavy += [n for n in names if n.split(".")[0] in ("numpy", "rich", "scipy", "matplotlib", "torch")]
    assert not heavy, f"{path.name} imports at start-up: {heavy}"


# --- CONTRIBUTING.md: the map of the modules --------------------------------------------------
#
# Rule: every module (each .py under src/shardbudget but __init__.py / __main__.py) is named in the
# "Where things live" table, either by its path relative to src/shardbudget in a row's path cell
# (`deploy.py`, `model/layers.py`), or, in a package row (path cell `report/`), by its stem or a
# `fig_*`-style pattern in backticks in the job cell. In a package row every backticked bare name
# must be one of that package's modules (or a pattern matching one), so a row cannot list a module
# that is gone; every backticked path in a path cell must exist (a pattern must match a file); and
# every `file.py` / `dir/file.py` (or `dir/file.toml`, `.json`, `.js`) the document mentions must
# exist under src/shardbudget, the repo root, scripts/, tests/ or benchmarks/.

PATH_ROOTS = (SRC, ROOT, ROOT / "src", ROOT / "scripts", ROOT / "tests", ROOT / "benchmarks")
_SPAN = re.compile(r"`([^`]+)`")
_BARE_NAME = re.compile(r"[a-z_][a-z0-9_]*\*?")
# a file path: word segments joined by "/", a .py (or, with a "/", .toml/.json/.js) file at the end;
# not part of a longer path, a <placeholder> or a *pattern*
_MENTIONED_PATH = re.compile(r"(?<![\w./<>*-])((?:[\w-]+/)*[\w-]+\.(?:py|toml|json|js))(?![\w/*<>-])")


def _modules_rel() -> list[str]:
    return sorted(
        p.relative_to(SRC).as_posix()
        for p in SRC.rglob("*.py")
        if p.name not in ("__init__.py", "__main__.py") and "__pycache__" not in p.parts
    )


def _table_rows(text: str) -> list[tuple[list[str], list[str]]]:
    """(backticked spans of the path cell, of the job cell) for each row of "Where things live"."""
    section = text.split("## Where things live", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        if not line.startswith("|") or set(line) <= set("|-: "):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        paths = _SPAN.findall(cells[0])
        if paths:  # the header row has none
            rows.append((paths, _SPAN.findall(" ".join(cells[1:]))))
    return rows


def _documented(text: str) -> tuple[set[str], list[str]]:
    """Modules the table names, and the problems with what it names."""
    modules, problems, named = set(_modules_rel()), [], set()
    for paths, spans in _table_rows(text):
        for path in paths:
            hits = sorted(SRC.glob(path.rstrip("/"))) if "*" in path else [SRC / path.rstrip("/")]
            if not hits or not all(h.exists() for h in hits):
                problems.append(f"`{path}` (path cell) is not under src/shardbudget")
            if path.endswith(".py"):
                named.add(path)
            if not path.endswith("/"):
                continue
            own = {m for m in modules if m.rsplit("/", 1)[0] + "/" == path}
            for span in spans:
                if not _BARE_NAME.fullmatch(span):
                    continue  # an option, a file, a phrase: not a module name
                matches = {m for m in own if fnmatch.fnmatch(Path(m).stem, span)}
                if not matches:
                    problems.append(f"`{span}` in the `{path}` row is not a module of {path}")
                named |= matches
    return named, problems


def _missing_paths(text: str) -> list[str]:
    missing = []
    for path in sorted(set(_MENTIONED_PATH.findall(text))):
        if not path.endswith(".py") and "/" not in path:
            continue  # `my.toml`, `NAME.toml`: a user's file in an example
        if not any((root / path).is_file() for root in PATH_ROOTS):
            missing.append(path)
    return missing


def test_contributing_names_every_module():
    named, problems = _documented(CONTRIBUTING.read_text(encoding="utf-8"))
    assert not problems, "CONTRIBUTING.md's table names what is not there: " + "; ".join(problems)
    unnamed = sorted(set(_modules_rel()) - named)
    assert not unnamed, f"modules missing from CONTRIBUTING.md's 'Where things live' table: {unnamed}"


def test_contributing_paths_exist():
    missing = _missing_paths(CONTRIBUTING.read_text(encoding="utf-8"))
    assert not missing, f"CONTRIBUTING.md mentions files that do not exist: {missing}"


def test_the_contributing_checks_catch_a_stale_map():
    text = CONTRIBUTING.read_text(encoding="utf-8")
    assert "decide/deploy.py" in _documented(text)[0] and "report/fig_plans.py" in _documented(text)[0]
    # a module left out, a package row naming a module that is gone, a path that does not exist
    row = next(line for line in text.splitlines() if line.startswith("| `decide/deploy.py`"))
    assert "decide/deploy.py" not in _documented(text.replace(row + "\n", ""))[0]
    assert _documented(text.replace("`fig_*`", "`fig_gone`"))[1]
    assert _missing_paths("see `model/nothing.py` and tests/unit/test_nothing.py") == [
        "model/nothing.py",
        "tests/unit/test_nothing.py",
    ]
    assert _missing_paths("`--catalog my.toml`, catalog/systems.toml, `engines/<engine>.toml`") == []
