"""The package's layout contract: a pipeline you can see in the folders.

capture (model → attention record) → relevance (code that re-runs a model) →
methods (pure functions on arrays) → results → pipeline (orchestration) →
evaluation → demo → diagnostics → views. Nothing lower imports anything
higher, there are no import cycles, and no module takes a private name from
another package. The graph is read from the source with ``ast``, so an import
inside a function counts as much as one at the top of a file; only imports
under ``if TYPE_CHECKING:`` (which never run) are left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "attnwidget"

#: Top-level packages from the lowest layer up. A package may import its own
#: modules and those of lower layers; packages that share a layer are
#: independent of each other. ``attnwidget`` itself (the public re-exports in
#: ``attnwidget/__init__.py``) stands above everything and nothing imports it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "_keywords", "_version"),
    ("_arrays", "_images"),
    ("capture",),
    ("relevance",),
    ("methods", "metrics", "teach"),
    # annotations scores its annotators' agreement with metrics' pure functions.
    ("annotations",),
    ("results",),
    ("pipeline",),
    ("evaluation",),
    ("demo",),
    ("diagnostics",),
    ("views",),
)

#: The view families inside ``attnwidget/views``, from the lowest up.
VIEW_LAYERS: tuple[tuple[str, ...], ...] = (
    ("core",),
    ("saliency", "matrix"),
    ("attention",),
    ("flow", "image", "annotate", "evaluate", "compare", "generation", "teach"),
    ("explorer",),
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(path: Path, modules: set[str]) -> list[tuple[str, str, int]]:
    """``(imported module, imported name or "", line)`` for every run-time import in ``path``."""
    here = _module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found: list[tuple[str, str, int]] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for sub in child.orelse:
                    visit(sub)
                continue
            if isinstance(child, ast.Import):
                found.extend((alias.name, "", child.lineno) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")[: len(package.split(".")) - (child.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                for alias in child.names:
                    full = f"{base}.{alias.name}"
                    if full in modules:  # `from package import submodule`
                        found.append((full, "", child.lineno))
                    else:
                        found.append((base, alias.name, child.lineno))
            visit(child)

    visit(ast.parse(path.read_text(), filename=str(path)))
    return [item for item in found if item[0].split(".")[0] == "attnwidget"]


def _graph() -> dict[str, list[tuple[str, str, int]]]:
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {_module_name(p) for p in paths}
    return {_module_name(p): _imports(p, modules) for p in paths}


GRAPH = _graph()


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "attnwidget"


def _layer_of(name: str, layers: tuple[tuple[str, ...], ...]) -> int:
    for index, layer in enumerate(layers):
        if name in layer:
            return index
    raise AssertionError(
        f"{name!r} is in no layer of tests/test_layout.py; add it where it belongs in the pipeline."
    )


def test_graph_reads_the_whole_package():
    # The contract is only as good as the graph: it must see the known edges.
    assert len(GRAPH) > 150
    assert any(
        target == "attnwidget.capture.run" for target, _, _ in GRAPH["attnwidget.pipeline.explain"]
    )
    local = [t for t, _, _ in GRAPH["attnwidget.results.explanation"]]
    assert "attnwidget.methods.registry" in local  # imported inside a method


def test_every_package_has_a_layer():
    for module in GRAPH:
        top = _top(module)
        if top != "attnwidget":
            _layer_of(top, LAYERS)
    for module in GRAPH:
        if module.startswith("attnwidget.views.") and module.count(".") >= 3:
            _layer_of(module.split(".")[2], VIEW_LAYERS)


def test_no_import_cycles():
    edges = {m: {t for t, _, _ in deps if t in GRAPH and t != m} for m, deps in GRAPH.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def connect(node: str) -> None:  # Tarjan (1972): strongly connected components
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges[node]):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            connect(node)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_nothing_lower_imports_anything_higher():
    wrong = []
    for module, deps in GRAPH.items():
        here = _top(module)
        for target, _, line in deps:
            there = _top(target)
            if here == "attnwidget":
                continue  # the public re-exports stand above every layer
            if there == "attnwidget":
                wrong.append(f"{module}:{line} imports the top-level package attnwidget")
            elif here != there and _layer_of(there, LAYERS) >= _layer_of(here, LAYERS):
                wrong.append(f"{module}:{line} ({here}) imports {target} ({there})")
    assert not wrong, "\n".join(wrong)


def test_view_families_are_layered():
    wrong = []
    for module, deps in GRAPH.items():
        if not module.startswith("attnwidget.views.") or module.count(".") < 3:
            continue
        here = module.split(".")[2]
        for target, _, line in deps:
            if target == "attnwidget.views":
                wrong.append(f"{module}:{line} imports the views package (import the module)")
            elif target.startswith("attnwidget.views.") and target.count(".") >= 3:
                there = target.split(".")[2]
                if here != there and _layer_of(there, VIEW_LAYERS) >= _layer_of(here, VIEW_LAYERS):
                    wrong.append(f"{module}:{line} ({here}) imports {target} ({there})")
    assert not wrong, "\n".join(wrong)


def test_no_private_names_from_another_package():
    wrong = []
    for module, deps in GRAPH.items():
        for target, name, line in deps:
            private_module = any(
                part.startswith("_") and not part.startswith("__") for part in target.split(".")
            )
            private_name = name.startswith("_") and not name.startswith("__")
            owner = target.split(".")[:2] if len(target.split(".")) > 1 else ["attnwidget"]
            if module.split(".")[:2] == owner or _top(module) == "attnwidget":
                continue
            if _top(target) in {"errors", "_keywords", "_version", "_arrays", "_images"}:
                private_module = False  # the base modules are shared by design
            if private_name or private_module:
                wrong.append(f"{module}:{line} takes {target}{'.' + name if name else ''}")
    assert not wrong, "private names taken from another package:\n" + "\n".join(wrong)


@pytest.mark.parametrize("layers", [LAYERS, VIEW_LAYERS], ids=["packages", "views"])
def test_layers_name_each_package_once(layers):
    names = [name for layer in layers for name in layer]
    assert len(names) == len(set(names))
