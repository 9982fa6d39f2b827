"""The layout's rules, read from the source: what may import what (STYLE §Layout).

`ticketing/` is plumbing and imports no app; apps import one way, so the graph of apps has no
cycle; and no model is fetched through `_meta` or the app registry to dodge an import.
Every import counts, also one inside a function or under `TYPE_CHECKING`.
"""

import ast
from collections import defaultdict
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(settings.BASE_DIR)
PROJECT = "ticketing"
APPS = sorted(
    name
    for name in settings.INSTALLED_APPS
    if "." not in name and (ROOT / name / "__init__.py").exists() and name != PROJECT
)


def _modules(package: str):
    for path in sorted((ROOT / package).rglob("*.py")):
        if "migrations" not in path.parts:
            yield path, ast.parse(path.read_text(), filename=str(path))


def _imported_packages(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def _app_graph() -> dict[str, dict[str, list[str]]]:
    """{app: {imported app: [files that import it]}}."""
    graph: dict[str, dict[str, list[str]]] = {}
    for app in APPS:
        edges = defaultdict(list)
        for path, tree in _modules(app):
            for package in _imported_packages(tree) & set(APPS) - {app}:
                edges[package].append(str(path.relative_to(ROOT)))
        graph[app] = dict(edges)
    return graph


def test_layout_knows_the_apps():
    assert {"accounts", "organizers", "events", "tickets", "oauth_setup"} <= set(APPS)


def test_project_package_imports_no_app():
    offenders = [
        f"{path.relative_to(ROOT)} imports {package}"
        for path, tree in _modules(PROJECT)
        for package in sorted(_imported_packages(tree) & set(APPS))
    ]
    assert offenders == []


def test_apps_import_each_other_one_way_only():
    graph = _app_graph()
    cycles = []

    def visit(app: str, trail: list[str]) -> None:
        for imported in sorted(graph[app]):
            if imported in trail:
                cycle = [*trail[trail.index(imported) :], imported]
                cycles.append(
                    " -> ".join(cycle) + f" (first edge in {graph[cycle[0]][cycle[1]][0]})"
                )
            elif len(trail) < len(APPS):
                visit(imported, [*trail, imported])

    for app in APPS:
        visit(app, [app])
    assert cycles == []


def _fetches_a_model(node: ast.AST) -> bool:
    """`X._meta.get_field("f").related_model` or `apps.get_model(...)`."""
    if not isinstance(node, ast.Attribute):
        return False
    if node.attr == "related_model":
        return (
            isinstance(node.value, ast.Call) and getattr(node.value.func, "attr", "") == "get_field"
        )
    return node.attr == "get_model" and isinstance(node.value, ast.Name) and node.value.id == "apps"


@pytest.mark.parametrize("package", [*APPS, PROJECT])
def test_no_model_is_fetched_around_an_import(package):
    dodges = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path, tree in _modules(package)
        for node in ast.walk(tree)
        if _fetches_a_model(node)
    ]
    assert dodges == []
