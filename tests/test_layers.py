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


def _target(node: ast.ImportFrom, package: str) -> str:
    """The module a ``from ... import`` statement in ``package`` imports from."""
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


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
            target = _target(node, package)
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
    """(A module may name a higher one for type checking only: ``sdk.client._map`` names the
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


def _runtime_imports(path: Path) -> set[str]:
    """The sdk modules ``path`` imports when it is imported: module-level imports only
    (not those inside functions, not those for type checking). ``from . import x`` is an
    import of ``x``, not of the package it is taken from (that package is already being
    imported)."""
    mod = _module_of(path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        nodes: list[ast.stmt] = [node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if isinstance(node, ast.Try):
            nodes = list(node.body)
        for n in nodes:
            if isinstance(n, ast.ImportFrom):
                target = _target(n, package)
                if not (target == "sdk" or target.startswith("sdk.")):
                    continue
                where = SDK.parent / target.replace(".", "/")
                subs = [  # a module, Python or C (the chunking engine's _native, built or not)
                    f"{target}.{a.name}"
                    for a in n.names
                    if (where / f"{a.name}.py").exists()
                    or any(where.glob(f"{a.name}.*.so"))
                    or (where / a.name).is_dir()
                ]
                out |= set(subs) if subs else {target}
            elif isinstance(n, ast.Import):
                out |= {a.name for a in n.names if a.name.startswith("sdk.")}
    return out


def test_no_import_cycle_between_files() -> None:
    """Run-time imports between the SDK's files form no cycle (Tarjan's strongly
    connected components): a module never needs one that needs it back to load."""
    graph = {_module_of(p): _runtime_imports(p) for p in SDK.rglob("*.py")}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in graph or w == v:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert cycles == []


# Where one package reaches into the stream package's private modules (its parsers'
# and reducer's internals, kept out of its public exports): each is a listed seam, to
# turn into a documented internal API. New code adds no line here.
SEAMS = {
    ("sdk.client._backends", "sdk.stream._events"),
    ("sdk.client._backends", "sdk.stream._openai"),
    ("sdk.client._backends", "sdk.stream._stream"),
    ("sdk.client._map", "sdk.stream._accumulate"),
    ("sdk.client._resume", "sdk.stream._resume"),
    ("sdk.server._app", "sdk.stream._accumulate"),
    ("sdk.server._app", "sdk.stream._resume"),
    ("sdk.server._app", "sdk.stream._stream"),
    ("sdk.server._app", "sdk.stream._wire"),
    ("sdk.server._http", "sdk.stream._wire"),
    ("sdk.server._openai", "sdk.stream._openai"),
    ("sdk.server._takeover", "sdk.stream._accumulate"),
    ("sdk.session", "sdk.stream._resume"),
    ("sdk.session._answer", "sdk.stream._accumulate"),
    ("sdk.session._answer", "sdk.stream._resume"),
}


def _package(module: str) -> str:
    """The sub-package a module belongs to (``sdk`` for the top level's own files)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and not parts[1].startswith("_") else "sdk"


def test_no_package_imports_another_packages_private_module_but_through_a_listed_seam() -> None:
    found = set()
    for path in SDK.rglob("*.py"):
        mod = _module_of(path)
        for target in _imports(path):
            parts = target.split(".")
            private = parts[-1].startswith("_") and not parts[-1].startswith("__")
            if len(parts) >= 3 and private and _package(target) != _package(mod):
                found.add((mod, target))
    assert found - SEAMS == set(), "a private module of another package: " + repr(sorted(found - SEAMS))
    assert SEAMS - found == set(), "a seam that is gone: take it off the list " + repr(sorted(SEAMS - found))


def _private_names(package: Path) -> set[str]:
    """Private attributes a package defines: ``self._x = ...``, ``def _x`` and
    ``_x = ...`` in a class body."""
    out: set[str] = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                    out.add(node.attr)
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        out.add(item.name)
                    elif isinstance(item, ast.AnnAssign | ast.Assign):
                        targets = [item.target] if isinstance(item, ast.AnnAssign) else item.targets
                        out |= {t.id for t in targets if isinstance(t, ast.Name)}
                    if isinstance(item, ast.Assign | ast.AnnAssign) and "__slots__" in ast.unparse(item):
                        value = item.value
                        if isinstance(value, ast.Tuple | ast.List):
                            out |= {e.value for e in value.elts if isinstance(e, ast.Constant)}
    return {n for n in out if n.startswith("_") and not n.startswith("__")}


def test_no_package_reads_a_private_attribute_that_only_another_package_defines() -> None:
    """``client._dispatch`` from the server: a rename in the client breaks the server at
    run time only. A package reads another object's ``_x`` only where its own code
    defines a ``_x`` (its own classes), never one that only another package defines."""
    packages = [p for p in SDK.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    own = {p.name: _private_names(p) for p in packages}
    found = []
    for p in packages:
        others = set().union(*(names for name, names in own.items() if name != p.name))
        for path in p.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if not (isinstance(node, ast.Attribute) and node.attr.startswith("_")):
                    continue
                if node.attr.startswith("__") or node.attr in own[p.name]:
                    continue
                if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                    continue
                if node.attr in others:
                    found.append(f"{path.relative_to(SDK)}:{node.lineno}: {ast.unparse(node)}")
    assert found == []
