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
                targets = [f"{base}.{a.name}" for a in node.names]
                if not all(x in names for x in targets):  # not only submodules: the package
                    targets.append(base)
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


# packages whose modules also import one another one way (module by module, not only package
# by package): each module's imports name modules below it, never one importing it back
ONE_WAY_INSIDE = ("workbench.hierarchy", "workbench.hierarchy.search")


def _cycle_inside(graph: dict[str, set[str]], package: str) -> list[str] | None:
    """A cycle among the modules directly in `package` (each module once, the first again at
    the end), or None."""
    inside = {m: {d for d in deps if d.rpartition(".")[0] == package}
              for m, deps in graph.items() if m.rpartition(".")[0] == package}
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(inside.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [node, nxt] if nxt in path else [node, nxt]
            if nxt not in state and (found := visit(nxt, path + [node])):
                return found
        state[node] = 2
        return None

    for node in sorted(inside):
        if node not in state and (found := visit(node, [])):
            return found
    return None


def test_no_import_cycle_between_the_modules_of_a_one_way_package() -> None:
    graph = _graph()
    for package in ONE_WAY_INSIDE:
        assert len([m for m in graph if m.rpartition(".")[0] == package]) > 5  # seen
        cycle = _cycle_inside(graph, package)
        assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_module_checker_finds_a_cycle() -> None:
    """The rule can fail: a planted kernel → driver import inside the search package."""
    planted = {k: set(v) for k, v in _graph().items()}
    planted["workbench.hierarchy.search.kernel"].add("workbench.hierarchy.search.driver")
    cycle = _cycle_inside(planted, "workbench.hierarchy.search")
    assert cycle is not None and cycle[0] == cycle[-1]
    assert {"workbench.hierarchy.search.kernel", "workbench.hierarchy.search.driver"} <= set(cycle)


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


MUTATORS = {"add", "append", "clear", "discard", "extend", "insert", "move_to_end", "pop",
            "popitem", "put", "remove", "setdefault", "update"}


def _module_state(source: str, where: str) -> list[str]:
    """The module-level names of `source` that its code mutates (an item set or deleted, a
    mutating method called: a module-level cache or registry) or rebinds (`global`)."""
    tree = ast.parse(source)
    names = {t.id for node in tree.body if isinstance(node, ast.Assign | ast.AnnAssign)
             for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
             if isinstance(t, ast.Name)}
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            found.update(f"{n} (global)" for n in node.names)
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del) \
                and isinstance(node.value, ast.Name) and node.value.id in names:
            found.add(node.value.id)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in MUTATORS and isinstance(node.func.value, ast.Name) \
                and node.func.value.id in names:
            found.add(node.func.value.id)
    return [f"{where} {name}" for name in sorted(found)]


# module state that is no cache, with why it must be process-wide
NOT_CACHES = {
    # a stop request names a thread and is set from a signal handler (SIGUSR1 in a worker,
    # SIGINT in the CLI), where nothing can be passed: per-thread flags and progress watchers
    "workbench/hierarchy/interrupt.py _abandoned": "per-thread stop flags",
    "workbench/hierarchy/interrupt.py _requested": "per-thread stop flags",
    "workbench/hierarchy/interrupt.py _watchers": "per-thread progress watchers",
    # set just before a fork so that the workers share the computed prefix copy-on-write
    # (passing it would pickle megabytes of activations per task)
    "workbench/quant/search.py _JOB (global)": "what forked workers evaluate",
}


def test_no_module_level_mutable_state() -> None:
    """Caches are passed in (`memo.Caches`), never held by a module; the only module state
    left is NOT_CACHES (each with its reason)."""
    root = Path(__file__).resolve().parents[1] / "workbench"
    held = [s for path in sorted(root.rglob("*.py"))
            for s in _module_state(path.read_text(), str(path.relative_to(root.parent)))]
    assert set(held) <= set(NOT_CACHES), "pass a memo.Caches instead of module state: " + \
        "; ".join(sorted(set(held) - set(NOT_CACHES)))
    assert set(NOT_CACHES) <= set(held), "NOT_CACHES names state that is gone: " + \
        "; ".join(sorted(set(NOT_CACHES) - set(held)))


def test_the_state_rule_can_fail() -> None:
    cache = "_SEEN = {}\n\ndef f(k):\n    _SEEN[k] = 1\n"
    lru = "from m import ByteLRU\n_KEPT = ByteLRU(1, len)\n\ndef f(k, v):\n    _KEPT.put(k, v)\n"
    rebound = "_N = 0\n\ndef f():\n    global _N\n    _N += 1\n"
    local = "_NAMES = {'a': 1}\n\ndef f():\n    seen = {}\n    seen['a'] = _NAMES['a']\n"
    assert _module_state(cache, "x.py") == ["x.py _SEEN"]
    assert _module_state(lru, "x.py") == ["x.py _KEPT"]
    assert _module_state(rebound, "x.py") == ["x.py _N (global)"]
    assert _module_state(local, "x.py") == []
