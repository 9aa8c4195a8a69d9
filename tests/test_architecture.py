"""Imports inside workbench/ run one way: no module imports, even indirectly, a module that
imports it back (specs → models → explore → viz → ui/cli)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "workbench"


def _graph() -> dict[str, set[str]]:
    """Module → the workbench modules it imports (function-level imports included)."""
    names = {".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts)
             .removesuffix(".__init__"): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        deps = set()
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1]
                                    + ([base] if base else []))
                targets = [f"{base}.{a.name}" for a in node.names] + [base]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            deps |= {t for t in targets if t in names and t != name}
        graph[name] = deps
    return graph


def _top(module: str) -> str:
    """workbench.explore.query → workbench.explore (the unit the one-way rule is about)."""
    return ".".join(module.split(".")[:2])


def test_no_import_cycle_between_workbench_modules() -> None:
    graph: dict[str, set[str]] = {}
    for module, deps in _graph().items():
        graph.setdefault(_top(module), set()).update(
            _top(d) for d in deps if _top(d) not in (_top(module), "workbench"))
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join(path + [node, nxt]))
            if nxt not in state:
                visit(nxt, path + [node])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    assert "workbench.explore" in graph and "workbench.simd" in graph  # the walk saw them


def test_the_checker_finds_a_cycle(monkeypatch) -> None:
    """The rule can fail: a planted simd → explore import is reported."""
    real = _graph()
    planted = {k: set(v) for k, v in real.items()}
    planted["workbench.simd"].add("workbench.explore.query")
    monkeypatch.setattr(__import__(__name__), "_graph", lambda: planted)
    try:
        test_no_import_cycle_between_workbench_modules()
    except AssertionError as exc:
        assert "workbench.simd" in str(exc) and "workbench.explore" in str(exc)
    else:
        raise AssertionError("the planted cycle was not found")


MAX_PARAMETERS = 10  # more travel in a frozen context object


def _wide_functions(source: str, where: str) -> list[str]:
    """The functions of `source` taking more than MAX_PARAMETERS (self and cls not counted)."""
    wide = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            a = node.args
            names = [*a.posonlyargs, *a.args, *a.kwonlyargs]
            count = len(names) + bool(a.vararg) + bool(a.kwarg)
            count -= bool(names and names[0].arg in ("self", "cls"))
            if count > MAX_PARAMETERS:
                wide.append(f"{where}:{node.lineno} {node.name} ({count})")
    return wide


def test_no_function_takes_more_than_ten_parameters() -> None:
    root = Path(__file__).resolve().parents[1] / "workbench"
    wide = [w for path in sorted(root.rglob("*.py"))
            for w in _wide_functions(path.read_text(), str(path.relative_to(root.parent)))]
    assert not wide, "pass a frozen context object instead: " + "; ".join(wide)


def test_the_parameter_rule_can_fail() -> None:
    eleven = "def f(a, b, c, d, e, f, g, h, i, j, k):\n    pass\n"
    method = "class C:\n    def m(self, a, b, c, d, e, f, g, h, i, j):\n        pass\n"
    assert _wide_functions(eleven, "x.py") == ["x.py:1 f (11)"]
    assert _wide_functions(method, "x.py") == []
