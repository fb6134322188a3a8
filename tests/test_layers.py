"""Imports point one way: the project's import graph has no cycle of any kind (imports inside functions and
under TYPE_CHECKING included), and modules imported by name at run time are the listed plug-in points."""

from __future__ import annotations

import ast
import pathlib

from tests.conftest import REPO

PACKAGES = ("gpusizer", "components", "policies", "provider")
# Folders installed under the distribution's name (pyproject: package-dir): components/ is gpusizer.components.
MAPPED = {"components": "gpusizer.components", "policies": "gpusizer.policies"}


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([MAPPED.get(parts[0], parts[0]), *parts[1:]])


def _project_modules() -> dict[str, pathlib.Path]:
    files = [p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")]
    return {_module_name(p): p for p in files}


def import_graph() -> dict[str, set[str]]:
    """Module -> project modules it imports anywhere in its body (top level and inside functions).

    `from a.b import c` is an edge to a.b.c when that is a module, else to a.b.
    Parent packages a module is imported through are not edges (every import
    of gpusizer.x runs gpusizer/__init__ first; counting that would make any
    package with a re-exporting __init__ a cycle). Imports under
    `if TYPE_CHECKING:` are edges too: a type a module needs is a dependency, run or not.
    """
    modules = _project_modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_pkg = path.name == "__init__.py"
        edges = set()
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative import
                    anchor = name.split(".") if is_pkg else name.split(".")[:-1]
                    anchor = anchor[: len(anchor) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            else:
                continue
            edges |= {t for t in targets if t in modules and t != name}
        graph[name] = edges
    return graph


def _is_type_checking(node: ast.AST) -> bool:
    """`if TYPE_CHECKING:` or `if typing.TYPE_CHECKING:`."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path a -> b -> ... -> a, or None (depth-first search, colouring nodes)."""
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_cycle_finder_finds_a_planted_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_the_graph_sees_imports_inside_functions():
    graph = import_graph()
    assert "gpusizer.policies.offline" in graph["gpusizer.cli"]  # imported only inside the preview handler
    assert "gpusizer.spec" in graph["gpusizer.catalog.onprem"]
    assert "gpusizer.decide.judgement" in graph["gpusizer.decide.misses"]  # under TYPE_CHECKING: an edge too
    assert "gpusizer.decide.decision" not in graph["gpusizer.decide.misses"]  # misses takes what it reads


# Modules that import another module by a name computed at run time: each a plug-in point, not an edge.
PLUGIN_IMPORTS = {
    "gpusizer": "public names imported on first use (PEP 562 __getattr__ over _EXPORTS)",
    "gpusizer.base.providers": "a provider's builder, refresher or component module, named in its registry entry",
    "gpusizer.policies.mocks": "the Pulumi resource class a mocked run registers, by its Python type name",
    "gpusizer.policies.offline": "a Pulumi program file run as __main__ (runpy), and the SDK modules of the chosen providers",
}


def _dynamic_imports(tree: ast.AST) -> bool:
    calls = (n for n in ast.walk(tree) if isinstance(n, ast.Call))
    return any(
        (isinstance(f := c.func, ast.Attribute) and f.attr in ("import_module", "run_path", "run_module"))
        or (isinstance(f, ast.Name) and f.id == "__import__")
        for c in calls
    )


def test_modules_imported_by_name_at_run_time_are_the_listed_plug_in_points():
    found = {name for name, path in _project_modules().items() if _dynamic_imports(ast.parse(path.read_text()))}
    assert found == set(PLUGIN_IMPORTS)


def test_the_project_import_graph_has_no_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def _imported(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and not node.level:
        base = node.module or ""
        return [base, *(f"{base}.{a.name}" for a in node.names)]
    return []


def test_the_engine_imports_neither_components_nor_pulumi_at_module_level():
    pulumi_side = tuple(MAPPED.values())
    for name, path in _project_modules().items():
        if not name.startswith("gpusizer") or name.startswith(pulumi_side):
            continue
        for node in ast.parse(path.read_text()).body:  # module level only: lazy imports are allowed
            for n in _imported(node):
                assert not n.startswith(("pulumi", *pulumi_side, "boto3", "botocore", "google")), (name, n)


def test_nothing_imports_the_folders_by_their_uninstalled_top_level_names():
    # Installed, `components` and `policies` exist only as gpusizer.components and gpusizer.policies.
    files = [
        *(p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")),
        *REPO.glob("*.py"),
        *(REPO / "tests").rglob("*.py"),
    ]
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            for n in _imported(node):
                assert n.split(".")[0] not in MAPPED, f"{path.relative_to(REPO)} imports {n}"


def test_the_architecture_doc_names_every_module_and_package():
    doc = (REPO / "docs" / "architecture.md").read_text()
    files = [p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")]
    missing = [
        str(p.relative_to(REPO))
        for p in files
        if str(p.relative_to(REPO)) not in doc and not (p.parent.name in ("builder", "refresh") and p.name in doc)
    ]
    assert missing == [], f"docs/architecture.md does not name: {', '.join(missing)}"
