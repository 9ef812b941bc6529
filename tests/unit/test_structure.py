"""The shape of the tree: an import graph without cycles, small modules, short functions, and
imports at the top of each module except the heavy optional libraries (kept lazy for start-up)."""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "shardbudget"
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60
# Imported inside functions on purpose: heavy (torch, matplotlib, scipy) or optional (tomli_w, the
# click copy typer vendors on some versions, huggingface_hub for --download).
LAZY_OK = ("torch", "matplotlib", "scipy", "tomli_w", "typer._click", "click", "huggingface_hub",
           ".worker",  # measure/worker.py is the one rank's torch code
           # modules one command alone uses, imported by that command in cli.py so that the others
           # start without them (`plan` and `deploy` start-up; benchmarks/deploy_speed.py)
           ".check", ".deploy", ".disagg", ".measure", ".report", ".tail_plan", ".topo")


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
        base = base[:len(base) - (node.level - 1)]
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
                return stack[stack.index(m):] + [m]
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
    assert graph["shardbudget.step"] >= {"shardbudget.model", "shardbudget.collectives"}  # the graph is real
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


def test_a_cycle_is_found_when_there_is_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_module_and_function_sizes(path):
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_MODULE_LINES, f"{path.name}: {len(text.splitlines())} lines"
    long = [(n.name, n.end_lineno - n.lineno + 1) for n in ast.walk(ast.parse(text))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, f"{path.name}: functions over {MAX_FUNCTION_LINES} lines: {long}"


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_imports_are_at_the_top(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
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
                inner += [f"{fn.name}: {n}" for n in names if not n.startswith(LAZY_OK)]
    assert not inner, f"imports inside functions (move them to the top): {inner}"
