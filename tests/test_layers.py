"""Imports go one way: the layers of ``docs/architecture.md``, checked.

Every import of ``agentcore/`` and ``interpreters/`` is read from the source (those inside
functions too: they run later, but they are a dependency all the same). An import of a package's
name that is not one of its modules (``from ..transcript import Transcript``) is an import of
the package's ``__init__``; a module's own enclosing packages are imported before it by Python
and do not count. Then:

- no two modules import each other, directly or through others (no cycle);
- each module of ``interpreters`` imports only modules of its own layer or of a layer below:
  leaves → engine and observers → replay → front doors → applications;
- no module imports another module's private (``_name``) names.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).parents[1]

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("leaves", ("interpreters.signal", "interpreters.secrets", "interpreters.moved", "interpreters.tool",
                "interpreters.runtime.clock", "interpreters.runtime.gc_pause", "interpreters.streams.scripted",
                "interpreters.streams.http")),
    ("engine and observers", ("interpreters.runtime", "interpreters.transcript", "interpreters.otel",
                              "interpreters.streams.recorded", "interpreters.streams.cassette")),
    ("replay", ("interpreters.replay",)),
    ("front doors", ("interpreters.sync", "interpreters.aio")),
    ("applications", ("interpreters.agent", "interpreters.cli", "interpreters.ray", "interpreters.render",
                      "interpreters.pytest_plugin", "interpreters.streams", "interpreters")),
)
"""Each module's layer: the first entry, longest prefix first, that names it or a package of it."""


def modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for package in ("agentcore", "interpreters"):
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


MODULES = modules()


def imports(name: str) -> Iterator[tuple[int, str, tuple[str, ...]]]:
    """``(line, module imported, names taken from it)`` for each import of ``name``'s source
    that names a module of the two packages."""
    path, is_package = MODULES[name]
    here = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in ("agentcore", "interpreters"):
                    yield node.lineno, alias.name, ()
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            if base.split(".")[0] not in ("agentcore", "interpreters"):
                continue
            taken = tuple(a.name for a in node.names)
            submodules = [f"{base}.{n}" for n in taken if f"{base}.{n}" in MODULES]
            for module in submodules:
                yield node.lineno, module, ()
            rest = tuple(n for n in taken if f"{base}.{n}" not in MODULES)
            if rest:
                yield node.lineno, base, rest


def graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {name: set() for name in MODULES}
    for name in MODULES:
        for _, target, _ in imports(name):
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name and not name.startswith(target + "."):
                edges[name].add(target)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def layer(name: str) -> int:
    best, level = "", -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > len(best):
                best, level = prefix, i
    assert level >= 0, f"{name} is in no layer: add it to LAYERS"
    return level


def test_no_import_cycle_in_the_interpreters() -> None:
    edges = graph()
    assert [c for c in cycles(edges) if c[0].startswith("interpreters")] == []


def test_no_import_cycle_in_the_core() -> None:
    edges = graph()
    assert [c for c in cycles(edges) if c[0].startswith("agentcore")] == []


def test_the_interpreters_import_only_their_own_layer_and_those_below() -> None:
    wrong = []
    for name, targets in graph().items():
        if not name.startswith("interpreters"):
            continue
        for target in targets:
            if target.startswith("interpreters") and layer(target) > layer(name):
                wrong.append(f"{name} ({LAYERS[layer(name)][0]}) imports {target} ({LAYERS[layer(target)][0]})")
    assert wrong == []


def test_no_module_imports_another_module_s_private_names() -> None:
    wrong = [f"{MODULES[name][0].relative_to(ROOT)}:{line} imports {', '.join(n for n in names if n.startswith('_'))} "
             f"from {target}"
             for name in MODULES for line, target, names in imports(name)
             if any(n.startswith("_") and not n.startswith("__") for n in names)]
    assert wrong == []


def test_the_interpreters_package_has_at_most_ten_top_level_modules() -> None:
    top = sorted(p.name for p in (ROOT / "interpreters").glob("*.py"))
    assert len(top) <= 10, top
