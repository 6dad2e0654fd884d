"""The SDK's layers, read from its source: values at the bottom (``sdk._models``), the
error tree above them, then streams, then sessions; nothing low imports something high,
and no cycle joins the error tree, the stream package and the session package."""

from __future__ import annotations

import ast
from pathlib import Path

SDK = Path(__file__).resolve().parents[1] / "sdk"


def _module_of(path: Path) -> str:
    rel = path.relative_to(SDK.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, *, typing: bool = True) -> set[str]:
    """Every sdk module ``path`` imports, at run time (and for type checking, unless
    ``typing`` is false)."""
    mod = _module_of(path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out: set[str] = set()
    tree = ast.parse(path.read_text())
    skipped: set[int] = set()
    if not typing:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                skipped |= {id(n) for n in ast.walk(node)}
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target == "sdk" or target.startswith("sdk."):
                out.add(target)
                for a in node.names:  # "from . import _jsonexact" names a module
                    if (SDK.parent / (target.replace(".", "/") + f"/{a.name}.py")).exists():
                        out.add(f"{target}.{a.name}")
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("sdk.")}
    return out


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "sdk"


def _graph(*, typing: bool = True) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in SDK.rglob("*.py"):
        src = _layer(_module_of(path))
        found = _imports(path, typing=typing)
        graph.setdefault(src, set()).update(_layer(t) for t in found if _layer(t) != src)
    return graph


def test_the_values_module_imports_nothing_of_the_sdk() -> None:
    assert _imports(SDK / "_models.py") == set()


def test_the_error_tree_imports_only_the_values() -> None:
    assert _imports(SDK / "_errors.py") <= {"sdk._models"}


def test_no_cycle_between_errors_streams_and_sessions() -> None:
    graph = _graph()
    low_to_high = ["_models", "_errors", "stream", "session"]
    for i, low in enumerate(low_to_high):
        higher = set(low_to_high[i + 1 :])
        assert not (graph.get(low, set()) & higher), f"{low} imports {graph[low] & higher}"


def test_the_package_graph_has_no_cycle_at_run_time() -> None:
    """(A module may name a higher one for type checking only: ``sdk._map`` names the
    client that drives it.)"""
    graph = _graph(typing=False)
    graph.pop("sdk", None)  # the package's __init__ re-exports everything
    seen: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state = seen.get(node)
        if state == 1:
            raise AssertionError("import cycle: " + " -> ".join([*path, node]))
        if state == 2:
            return
        seen[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if nxt != "sdk":
                visit(nxt, [*path, node])
        seen[node] = 2

    for node in sorted(graph):
        visit(node, [])
