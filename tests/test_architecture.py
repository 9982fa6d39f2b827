"""The layout's rules, read from the source: what may import what (STYLE §Layout).

`ticketing/` is plumbing and imports no app; apps import one way, so the graph of apps has no
cycle; and no model is fetched through `_meta` or the app registry to dodge an import.
Every import counts, also one inside a function or under `TYPE_CHECKING`.
"""

import ast
import functools
import importlib
import re
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from django.apps import apps as django_apps
from django.conf import settings

ROOT = Path(settings.BASE_DIR)
PROJECT = "ticketing"
APPS = sorted(
    name
    for name in settings.INSTALLED_APPS
    if "." not in name and (ROOT / name / "__init__.py").exists() and name != PROJECT
)


@functools.cache
def _modules(package: str) -> list[tuple[Path, ast.AST]]:
    """(file, tree) of every module of `package` but its migrations; parsed once a run."""
    return [
        (path, ast.parse(path.read_text(), filename=str(path)))
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts
    ]


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
    assert {"accounts", "organizers", "events", "tickets", "checkin", "oauth_setup"} <= set(APPS)


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


# --- Rules with known violations (issue 27) -------------------------------------------------
# Each rule below is checked over the shipped packages and tolerates exactly the violations in
# its KNOWN_* table: a new one fails the test, and so does an entry that no longer matches
# anything (delete it: the tables only shrink). Each checker is also run on a synthetic source
# that breaks its rule (`test_checker_*`), so a rule that silently matches nothing is seen.

SHIPPED = [*APPS, PROJECT]


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _shipped_modules():
    """(repo-relative file, module name, tree) of every shipped module but migrations."""
    for package in SHIPPED:
        for path, tree in _modules(package):
            yield str(path.relative_to(ROOT)), _module_name(path), tree


# Entry points that set the process's environment when imported (production settings, WSGI):
# read, never imported, so that this test leaves the suite's process as it found it.
_NOT_IMPORTED = ("ticketing.settings", "ticketing.wsgi", "ticketing.asgi")


class _Namespace:
    """A shipped module's names, imported on first use (most checks need none)."""

    def __init__(self, module: str):
        self.module, self.names = module, None

    def get(self, name: str, default=None):
        if self.names is None:
            imported = not self.module.startswith(_NOT_IMPORTED)
            self.names = vars(importlib.import_module(self.module)) if imported else {}
        return self.names.get(name, default)


@functools.cache
def _namespace(module: str) -> _Namespace:
    return _Namespace(module)


def _is_ours(module: str) -> bool:
    return module.split(".")[0] in SHIPPED


def _is_third_party(module: str) -> bool:
    top = module.split(".")[0]
    return not (
        top in SHIPPED or top in sys.stdlib_module_names or top in {"__future__", "builtins"}
    )


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes of `tree`'s module, classes and functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(
            node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
        ) and ast.get_docstring(node, clean=False):
            found.add(id(node.body[0].value))
    return found


def _simple_assignments(function: ast.AST) -> dict[str, ast.expr]:
    """`name = <expression>` inside a function: what its local names stand for."""
    found = {}
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            found[node.targets[0].id] = node.value
    return found


def _evaluate(
    expr: ast.expr, namespace: dict | _Namespace, local: dict[str, ast.expr], depth: int = 0
):
    """The object a name, a dotted name or a model getter's call stands for in the module (a
    local `X = get_refresh_token_model()` followed); None if not that simple."""
    if depth > 5:
        return None
    if isinstance(expr, ast.Name):
        if expr.id in local:
            return _evaluate(local[expr.id], namespace, {}, depth + 1)
        return namespace.get(expr.id)
    if isinstance(expr, ast.Attribute):
        base = _evaluate(expr.value, namespace, local, depth + 1)
        return None if base is None else getattr(base, expr.attr, None)
    if isinstance(expr, ast.Call) and not expr.args and not expr.keywords:
        # Only the swappable-model getters (`get_user_model()`, DOT's `get_*_model()`): calling
        # anything else could have effects.
        func = _evaluate(expr.func, namespace, local, depth + 1)
        if re.fullmatch(r"get_\w*_model", getattr(func, "__name__", "")):
            return func()
    return None


def _with_functions(tree: ast.AST):
    """(node, the innermost function around it or None) for every node of `tree`."""
    stack = [(tree, None)]
    while stack:
        node, function = stack.pop()
        yield node, function
        inner = node if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else function
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))


def _check_against_known(found: dict[tuple[str, str], list[str]], known: dict) -> None:
    new = {key: where for key, where in found.items() if key not in known}
    assert new == {}, "new violations (fix them; see the rule's comment):\n" + "\n".join(
        f"  {key}: {', '.join(where)}" for key, where in sorted(new.items())
    )


def _check_known_still_there(found: dict, known: dict) -> None:
    gone = sorted(set(known) - set(found))
    assert gone == [], (
        "these known violations are gone; delete their entries from the table: " + repr(gone)
    )


# --- (a) No private name of a third party ---------------------------------------------------
# A `_name` of Django, DRF, DOT, django-tasks or any other library is not its API: the next
# minor release may rename or drop it (STYLE §5). Flagged: `from pkg import _x`, `import
# pkg._x`, `pkg._x` / `Imported._x`, a `_method` of a library base class overridden or called
# in a subclass (`self._x`, `super()._x`), and `obj._x` on any object when no code of ours
# defines an attribute `_x` (so it can only be the library's). An attribute we set ourselves on
# a library's object (`request._caller = ...`) is ours.

# Underscored but documented public API.
PUBLIC_UNDERSCORED = {
    "_meta",  # Django: the Model _meta API (ref/models/meta)
    "_default_manager",  # Django: Model._default_manager (topics/db/managers)
    "_base_manager",  # Django: Model._base_manager (topics/db/managers)
    "_state",  # Django: Model._state, its `adding` and `db` (ref/models/instances)
    "_exit",  # Python: os._exit, documented for leaving a process without its cleanup
}

# (file, name): why it is still there. All are tracked under issue 27 (no library internals).
KNOWN_PRIVATE_USES = {
    # drf-spectacular offers these refinements of the document only as `_` methods.
    ("ticketing/api/openapi.py", "_get_paginator"): "drf-spectacular AutoSchema",
    ("ticketing/api/openapi.py", "_map_serializer_field"): "drf-spectacular AutoSchema",
    ("ticketing/api/openapi.py", "_map_basic_serializer"): "drf-spectacular AutoSchema",
    ("ticketing/api/openapi.py", "_get_request_body"): "drf-spectacular AutoSchema",
    ("ticketing/api/openapi.py", "_process_override_parameters"): "drf-spectacular AutoSchema",
    ("ticketing/api/schema_urls.py", "_swagger_ui_resource"): "drf-spectacular Swagger view",
    ("ticketing/api/schema_urls.py", "_swagger_ui_favicon"): "drf-spectacular Swagger view",
    # Django's email builder: the ticket email's multipart/related part, through its hooks.
    ("tickets/notifications.py", "_create_message"): "overrides Django's EmailMessage",
    ("tickets/notifications.py", "_create_alternatives"): "calls Django's EmailMessage",
    ("tickets/notifications.py", "_create_attachments"): "calls Django's EmailMessage",
    # Django's OutputWrapper: the raw stream behind a command's stdout.
    ("tickets/management/commands/export_tickets.py", "_out"): "Django OutputWrapper._out",
    ("tickets/management/commands/import_tickets.py", "_out"): "Django OutputWrapper._out",
}


@functools.cache
def _attributes_we_define() -> set[str]:
    """Private attribute names some shipped code defines: in a class or module body, as an
    assigned attribute (`x._name = ...`), or through `setattr(x, "_name", ...)`."""
    names = set()
    for _, _, tree in _shipped_modules():
        names |= _attributes_defined_in(tree)
    return names


def _attributes_defined_in(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef):
            for statement in node.body:
                if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    names.add(statement.name)
                elif isinstance(statement, ast.Assign | ast.AnnAssign):
                    targets = getattr(statement, "targets", None) or [statement.target]
                    for target in targets:
                        for leaf in ast.walk(target):
                            if isinstance(leaf, ast.Name):
                                names.add(leaf.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif _is_attr_call(node, "setattr"):
            names.add(node.args[1].value)
    return {name for name in names if _is_private(name)}


def _is_attr_call(node: ast.AST, function: str) -> bool:
    """`getattr(x, "literal", ...)` and the like."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == function
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    )


def _third_party_imports(tree: ast.AST) -> set[str]:
    """Local names bound to a third party's module or object by an import."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _is_third_party(alias.name):
                    names.add(alias.asname or alias.name.split(".")[0])
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and node.module
            and _is_third_party(node.module)
        ):
            names.update(alias.asname or alias.name for alias in node.names)
    return names


def _library_ancestors(bases: list, namespace: dict | _Namespace) -> list[type]:
    """The third-party classes a class derives from, through the bases that resolve."""
    ancestors = []
    for base in bases:
        resolved = _evaluate(base, namespace, {})
        if isinstance(resolved, type):
            ancestors.extend(c for c in resolved.__mro__ if _is_third_party(c.__module__))
    return ancestors


def private_uses(
    tree: ast.AST, namespace: dict | _Namespace, ours: set[str]
) -> list[tuple[int, str, str]]:
    """(line, private name, what) for every use of a third party's private name in `tree`.

    `namespace` is the module's (classes' bases are resolved in it); `ours` the private
    attribute names our code defines (`_attributes_we_define`)."""
    imported = _third_party_imports(tree)
    found = []

    def attribute(node, obj, name, cls):
        if not _is_private(name) or name in PUBLIC_UNDERSCORED:
            return
        root = obj
        while isinstance(root, ast.Attribute):
            root = root.value
        on_self = (isinstance(obj, ast.Name) and obj.id in {"self", "cls"}) or (
            isinstance(obj, ast.Call) and getattr(obj.func, "id", "") == "super"
        )
        if isinstance(root, ast.Name) and root.id in imported:
            found.append((node.lineno, name, f"{ast.unparse(obj)}.{name}: a library's"))
        elif on_self and cls is not None and cls.get(name):
            found.append((node.lineno, name, f"{cls[name]}.{name}, used in a subclass"))
        elif name not in ours:
            found.append((node.lineno, name, f"{ast.unparse(obj)}.{name}: not ours"))

    def visit(node, cls):
        if isinstance(node, ast.ClassDef):
            # {name: the library class that defines it}; a base that cannot be resolved adds
            # nothing, and the `not ours` rule still sees the names only a library defines.
            cls = {}
            for ancestor in reversed(_library_ancestors(node.bases, namespace)):
                for name in vars(ancestor):
                    cls[name] = f"{ancestor.__module__}.{ancestor.__qualname__}"
            for statement in node.body:
                if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    _is_private(statement.name) and cls.get(statement.name)
                ):
                    found.append(
                        (statement.lineno, statement.name, f"overrides {cls[statement.name]}")
                    )
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _is_third_party(alias.name) and any(
                    _is_private(part) for part in alias.name.split(".")
                ):
                    found.append((node.lineno, alias.name, "imports a private module"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if _is_third_party(node.module):
                for name in [*node.module.split("."), *(a.name for a in node.names)]:
                    if _is_private(name):
                        found.append((node.lineno, name, f"imported from {node.module}"))
        elif isinstance(node, ast.Attribute):
            attribute(node, node.value, node.attr, cls)
        elif any(_is_attr_call(node, f) for f in ("getattr", "hasattr", "setattr")):
            attribute(node, node.args[0], node.args[1].value, cls)
        for child in ast.iter_child_nodes(node):
            visit(child, cls)

    visit(tree, None)
    return found


@functools.cache
def _all_private_uses() -> dict[tuple[str, str], list[str]]:
    ours = _attributes_we_define()
    found = defaultdict(list)
    for file, module, tree in _shipped_modules():
        for line, name, what in private_uses(tree, _namespace(module), ours):
            found[file, name].append(f"{line} ({what})")
    return dict(found)


def test_no_private_name_of_a_library():
    _check_against_known(_all_private_uses(), KNOWN_PRIVATE_USES)


def test_known_private_uses_are_still_there():
    _check_known_still_there(_all_private_uses(), KNOWN_PRIVATE_USES)


# Django's SQL compiler and its row converters are not API, though nothing in them is
# underscored: their shape changes between minor releases. Flagged: an import from
# `django.db.models.sql`, and these names imported or read as attributes.
ORM_INTERNALS = {
    "get_compiler",
    "results_iter",
    "klass_info",
    "annotation_col_map",
    "col_count",
    "get_related_populators",
    "get_db_converters",
    "get_col",
}

KNOWN_ORM_INTERNALS: dict[tuple[str, str], str] = {}


def orm_internals(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "django.db.models.sql" or node.module.startswith(
                "django.db.models.sql."
            ):
                found.append((node.lineno, node.module))
            found.extend((node.lineno, a.name) for a in node.names if a.name in ORM_INTERNALS)
        elif isinstance(node, ast.Import):
            found.extend(
                (node.lineno, a.name)
                for a in node.names
                if a.name.startswith("django.db.models.sql")
            )
        elif isinstance(node, ast.Attribute) and node.attr in ORM_INTERNALS:
            found.append((node.lineno, node.attr))
    return found


@functools.cache
def _all_orm_internals() -> dict[tuple[str, str], list[str]]:
    found = defaultdict(list)
    for file, _, tree in _shipped_modules():
        for line, name in orm_internals(tree):
            found[file, name].append(str(line))
    return dict(found)


def test_no_orm_compiler_internals():
    _check_against_known(_all_orm_internals(), KNOWN_ORM_INTERNALS)


def test_known_orm_internals_are_still_there():
    _check_known_still_there(_all_orm_internals(), KNOWN_ORM_INTERNALS)


# --- (b) No SQL into a table we do not own --------------------------------------------------
# django-tasks', DOT's and Django's tables belong to those libraries: their columns, states
# and locking protocol change with their releases (STYLE §5: "raw SQL into their tables;
# re-implementing how their worker claims tasks"). Flagged: a library's table named in a string
# passed to `cursor.execute`, `RawSQL`, `.raw()` or `.extra()` or in any SQL-looking string;
# a library model's `_meta.db_table` read (directly, or by a function of the module given that
# model); and the queryset writes and locks (`update`, `bulk_create`, `bulk_update`,
# `select_for_update`) that go around a library model's own methods.


def _our_apps_labels() -> set[str]:
    return {c.label for c in django_apps.get_app_configs() if _is_ours(c.name)}


def _table_owners() -> tuple[set[str], set[str], tuple[str, ...]]:
    """(our tables, the libraries' tables, the prefixes of the libraries' tables)."""
    ours, theirs = set(), set()
    for model in django_apps.get_models(include_auto_created=True):
        (ours if _is_ours(model._meta.app_config.name) else theirs).add(model._meta.db_table)
    prefixes = (
        *(f"{c.label}_" for c in django_apps.get_app_configs() if not _is_ours(c.name)),
        "django_",  # Django's own: django_migrations, django_session, ...
    )
    return ours, theirs, prefixes


_SQL_VERB = re.compile(r"\b(select|insert|update|delete)\b", re.IGNORECASE)
_SQL_CLAUSE = re.compile(r"\b(from|into|set|join)\b", re.IGNORECASE)
_TABLE_AFTER = re.compile(r'\b(?:from|join|into|update|table)\s+"?(\w+)', re.IGNORECASE)
_SQL_CALLS = {"execute", "executemany", "RawSQL", "raw", "extra"}
_WRITES = {"update", "bulk_create", "bulk_update", "select_for_update"}


def _text(node: ast.AST) -> str | None:
    """A string constant, or an f-string's constant parts (`{}` for the rest)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else " {} " for v in node.values)
    return None


def _foreign_model(obj) -> bool:
    meta = getattr(obj, "_meta", None)
    return isinstance(obj, type) and meta is not None and not _is_ours(meta.app_config.name)


def foreign_sql(
    tree: ast.AST, namespace: dict | _Namespace, tables: tuple
) -> list[tuple[int, str]]:
    """(line, table or model) for SQL into a table we do not own, in `tree`."""
    ours, theirs, prefixes = tables
    docstrings = _docstrings(tree)
    in_sql_call = {
        id(arg)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (getattr(node.func, "attr", None) or getattr(node.func, "id", None)) in _SQL_CALLS
        for arg in [*node.args, *(k.value for k in node.keywords)]
    }
    found, assignments = [], {}
    # Functions of this module that read `<parameter>._meta.db_table`.
    table_of_parameter = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            parameters = [a.arg for a in [*node.args.posonlyargs, *node.args.args]]
            for inner in ast.walk(node):
                if _is_db_table(inner) and isinstance(inner.value.value, ast.Name):
                    name = inner.value.value.id
                    if name in parameters:
                        table_of_parameter[node.name] = (parameters.index(name), name)
    for node, function in _with_functions(tree):
        if function not in assignments:
            assignments[function] = _simple_assignments(function) if function else {}
        local = assignments[function]
        text = _text(node)
        if (
            text is not None
            and id(node) not in docstrings
            and (id(node) in in_sql_call or (_SQL_VERB.search(text) and _SQL_CLAUSE.search(text)))
        ):
            names = set(re.findall(r"\w+", text)) & theirs
            names |= {
                t
                for t in _TABLE_AFTER.findall(text)
                if t not in ours and t.lower().startswith(prefixes)
            }
            found.extend((node.lineno, name) for name in sorted(names))
        if _is_db_table(node):
            model = _evaluate(node.value.value, namespace, local)
            if _foreign_model(model):
                found.append((node.lineno, f"{model.__name__}._meta.db_table"))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in table_of_parameter:
            position, keyword = table_of_parameter[node.func.id]
            args = {k.arg: k.value for k in node.keywords}
            arg = node.args[position] if position < len(node.args) else args.get(keyword)
            model = arg is not None and _evaluate(arg, namespace, local)
            if _foreign_model(model):
                found.append((node.lineno, f"{model.__name__}._meta.db_table"))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _WRITES
        ):
            model = _evaluate(_queryset_root(node.func.value, local), namespace, local)
            if _foreign_model(model):
                found.append((node.lineno, f"{model.__name__}.{node.func.attr}"))
    return found


def _is_db_table(node: ast.AST) -> bool:
    """`X._meta.db_table`."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "db_table"
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "_meta"
    )


def _queryset_root(expr: ast.expr, local: dict, depth: int = 0) -> ast.expr:
    """The model a queryset chain starts from: `M` of `M.objects.filter(...).ready()`, also
    through a local name the chain was assigned to."""
    while True:
        if isinstance(expr, ast.Call):
            expr = expr.func
        elif isinstance(expr, ast.Attribute) and expr.attr in {"objects", "_default_manager"}:
            return expr.value
        elif isinstance(expr, ast.Attribute):
            expr = expr.value
        elif isinstance(expr, ast.Name) and expr.id in local and depth < 5:
            return _queryset_root(local[expr.id], local, depth + 1)
        else:
            return expr


KNOWN_FOREIGN_SQL = {
    # A task RUNNING past the lease lost its worker and is made READY again: django-tasks
    # does not (its issue #46). Issue 27: take it from django-tasks once it does.
    ("ticketing/task_queue.py", "DBTaskResult.update"): "requeues abandoned tasks",
    # A lock through DOT's public manager (ORM, no SQL of ours), kept: a refresh token's
    # rotation waits for a concurrent one so a loser is refused and its family revoked. DOT's
    # public save_bearer_token locks the same row but then rotates whatever it finds: a token
    # just rotated by another request gets that request's pair back (blank: tokens are kept
    # only as hashes), one revoked meanwhile gets a new pair. No setting or public hook runs
    # between its lock and its rotation, so this lock is taken first, in one transaction
    # around DOT's (TicketingOAuth2Validator._save_rotation). Pinned by the race tests of
    # tests/oauth/test_hardening.py and test_token_saving.py.
    ("oauth_setup/validators.py", "RefreshToken.select_for_update"): "DOT's rotation lock",
}


@functools.cache
def _all_foreign_sql() -> dict[tuple[str, str], list[str]]:
    tables = _table_owners()
    found = defaultdict(list)
    for file, module, tree in _shipped_modules():
        for line, name in foreign_sql(tree, _namespace(module), tables):
            found[file, name].append(str(line))
    return dict(found)


def test_no_sql_into_a_library_table():
    _check_against_known(_all_foreign_sql(), KNOWN_FOREIGN_SQL)


def test_known_foreign_sql_is_still_there():
    _check_known_still_there(_all_foreign_sql(), KNOWN_FOREIGN_SQL)


def test_tables_are_told_apart():
    ours, theirs, prefixes = _table_owners()
    assert {"tickets_ticket", "orders_order", "oauth_setup_application"} <= ours
    assert {"django_tasks_database_dbtaskresult", "oauth2_provider_accesstoken"} <= theirs
    assert {"auth_permission", "django_session"} <= theirs
    assert not ours & theirs
    assert not [table for table in ours if table.startswith(prefixes)]


# --- (b2) Hand-written SQL only in `statements` modules (issue 41) --------------------------
# Each statement written by hand lives in its app's `statements.py` (or a `statements/`
# package), registered beside the ORM query it replaces (`ticketing.twins`), so that
# tests/statements holds it to that meaning. Flagged in every other shipped module (the apps
# and `ticketing/`; migrations are not walked, `RunSQL` is theirs; `ticketing/db.py` only builds
# text): a call of `.cursor()`, `.execute()`, `.executemany()`, `.raw()`, `.extra()`, `RawSQL()`
# and psycopg's `.copy("COPY ...")`. bench/ is not the service: its scripts set a database up
# as an operator would. In a statements module, each public function that runs SQL itself must
# be registered (`@replaces` or `@without_orm_twin`).

_SQL_RUNNERS = {"cursor", "execute", "executemany", "raw", "extra", "RawSQL"}


def _is_statements_module(file: str) -> bool:
    parts = Path(file).parts
    return parts[-1] == "statements.py" or "statements" in parts[:-1]


def sql_runs(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, call) of every call in `tree` that runs hand-written SQL."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
        if name in _SQL_RUNNERS:
            found.append((node.lineno, name))
        elif name == "copy" and node.args:
            text = _text(node.args[0])
            if text is not None and text.lstrip().upper().startswith("COPY"):
                found.append((node.lineno, name))
    return found


def unregistered_statements(module: str, tree: ast.Module, registry: dict) -> list[str]:
    """The public functions of a statements module that run SQL themselves, unregistered."""
    return [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and not _is_private(node.name)
        and sql_runs(node)
        and f"{module}.{node.name}" not in registry
    ]


@functools.cache
def _sql_outside_statements() -> dict[str, list[str]]:
    found = defaultdict(list)
    for file, _, tree in _shipped_modules():
        if not _is_statements_module(file):
            for line, name in sql_runs(tree):
                found[file].append(f"{line} ({name})")
    return dict(found)


def test_hand_written_sql_is_only_in_statements_modules():
    assert _sql_outside_statements() == {}


def test_each_statement_is_registered_with_its_twin():
    from ticketing.twins import REGISTRY

    unregistered, modules = {}, []
    for file, module, tree in _shipped_modules():
        if _is_statements_module(file):
            importlib.import_module(module)  # registers its statements
            modules.append(module)
            if names := unregistered_statements(module, tree, REGISTRY):
                unregistered[file] = names
    assert unregistered == {}, "decorate with @replaces(orm_twin) or @without_orm_twin(why)"
    assert {"organizers.statements", "events.statements", "ticketing.statements"} <= set(modules)


def test_checker_sql_runs():
    tree = ast.parse(
        """
from django.db import connection
from django.db.models.expressions import RawSQL


def read(queryset, raw, model):
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.executemany("INSERT INTO t VALUES (%s)", [[1]])
    with raw.copy(f"COPY {model._meta.db_table} (id) FROM STDIN") as copy:
        copy.write_row([1])
    rows = dict(a=1).copy()
    queryset.annotate(x=RawSQL("1", [])).extra(where=["1 = 1"])
    return model.objects.raw("SELECT 1"), rows, queryset.values("raw", "extra")
"""
    )
    assert sorted(sql_runs(tree)) == [
        (7, "cursor"),
        (8, "execute"),
        (9, "executemany"),
        (10, "copy"),
        (13, "RawSQL"),
        (13, "extra"),
        (14, "raw"),
    ]


def test_checker_unregistered_statements():
    tree = ast.parse(
        """
from django.db import connection


@replaces(thing_orm)
def thing():
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def other():
    with connection.cursor() as cursor:
        cursor.execute("SELECT 2")


def _helper(cursor):
    cursor.execute("SELECT 3")


def builds_text():
    return "SELECT 4"
"""
    )
    registry = {"app.statements.thing": object()}
    assert unregistered_statements("app.statements", tree, registry) == ["other"]


def test_statements_modules_are_told_apart():
    assert _is_statements_module("checkin/statements.py")
    assert _is_statements_module("tickets/statements/issue.py")
    assert not _is_statements_module("tickets/selectors.py")
    assert not _is_statements_module("tickets/issue_statements.py")


# --- (c) Nothing imports a services module from below ---------------------------------------
# Services are the top of an app's layers: models < rules and value types < selectors <
# services < the interfaces that call them. A value type kept in `services/` and imported by
# a serializer, an input, a rule or a notification makes them depend on every service's
# imports (issue 27: "value types move out of services/ so nothing imports upward"). Allowed to
# import `<app>/services.py` or `<app>/services/`: other services, views, the admin,
# management commands, tasks, an AppConfig's `ready()` wiring and devtools (demo data and bench
# helpers drive services as a command would).


def _is_services(module: str) -> bool:
    return "services" in module.split(".")


def _may_import_services(module: str) -> bool:
    parts = module.split(".")
    return (
        "services" in parts
        or parts[0] == "devtools"
        or any(p == "views" or p.endswith("_views") for p in parts)
        or "admin" in parts
        or ("commands" in parts[:-1] and parts[parts.index("commands") - 1] == "management")
        or parts[-1] in {"tasks", "apps"}
    )


def _absolute_imports(module: str, is_package: bool, tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) of every import in `tree`, relative ones resolved; `from a import b`
    counts as `a.b`, since b may be a module."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            base = ".".join(p for p in (base, node.module) if p) if node.level else node.module
            found.extend((node.lineno, f"{base}.{a.name}") for a in node.names)
    return found


def upward_imports(module: str, is_package: bool, tree: ast.AST) -> list[tuple[int, str]]:
    """(line, services module) imported by `module` from below."""
    if _may_import_services(module):
        return []
    return [
        (line, ".".join(name.split(".")[: name.split(".").index("services") + 1]))
        for line, name in _absolute_imports(module, is_package, tree)
        if _is_ours(name) and _is_services(name)
    ]


KNOWN_UPWARD_IMPORTS: dict[tuple[str, str], str] = {}


@functools.cache
def _all_upward_imports() -> dict[tuple[str, str], list[str]]:
    found = defaultdict(list)
    for file, module, tree in _shipped_modules():
        for line, name in upward_imports(module, file.endswith("__init__.py"), tree):
            found[file, name].append(str(line))
    return dict(found)


def test_nothing_imports_services_from_below():
    _check_against_known(_all_upward_imports(), KNOWN_UPWARD_IMPORTS)


def test_known_upward_imports_are_still_there():
    _check_known_still_there(_all_upward_imports(), KNOWN_UPWARD_IMPORTS)


# --- The checkers themselves, on sources that break each rule -------------------------------


def _snippet(source: str, module: str = "tickets.snippet") -> tuple[ast.AST, dict]:
    """A synthetic module of ours: its tree, and its namespace once run."""
    namespace = {"__name__": module}
    exec(compile(source, f"<{module}>", "exec"), namespace)
    return ast.parse(source), namespace


def test_checker_private_uses():
    tree, namespace = _snippet(
        """
import django.utils._os
from django.db import connection
from django.utils._os import safe_join
from oauth2_provider.oauth2_backends import _add_iss_to_redirect
from oauth2_provider.oauth2_validators import OAuth2Validator
from rest_framework import serializers


class Validator(OAuth2Validator):
    def _save_bearer_token(self, token, request, *args, **kwargs):
        return super()._save_bearer_token(token, request, *args, **kwargs)

    def save_bearer_token(self, token, request, *args, **kwargs):
        self._create_access_token(None, request, token)
        return self._our_helper()

    def _our_helper(self):
        return self.__class__


class Output(serializers.Serializer):
    pass


def read(request, stream, model):
    request._caller = connection._cursor()
    getattr(stream, "_out").write(request._request.path)
    return Output._declared_fields, model._meta, request._caller
"""
    )
    found = private_uses(tree, namespace, _attributes_defined_in(tree))
    assert sorted((line, name) for line, name, _ in found) == [
        (2, "django.utils._os"),
        (4, "_os"),
        (5, "_add_iss_to_redirect"),
        (11, "_save_bearer_token"),  # overrides DOT's
        (12, "_save_bearer_token"),  # calls DOT's
        (15, "_create_access_token"),
        (27, "_cursor"),
        (28, "_out"),
        (28, "_request"),
        (29, "_declared_fields"),
    ]


def test_checker_orm_internals():
    tree = ast.parse(
        """
from django.db.models.query import get_related_populators
from django.db.models.sql.compiler import SQLCompiler


def rows(queryset):
    compiler = queryset.query.get_compiler(using="default")
    return compiler.results_iter(), queryset.query.get_meta()
"""
    )
    assert sorted(orm_internals(tree)) == [
        (2, "get_related_populators"),
        (3, "django.db.models.sql.compiler"),
        (7, "get_compiler"),
        (8, "results_iter"),
    ]


def test_checker_foreign_sql():
    tree, namespace = _snippet(
        '''
from django.db import connection
from django.db.models.expressions import RawSQL
from django_tasks_db.models import DBTaskResult
from oauth2_provider.models import get_refresh_token_model
from tickets.models import Ticket

_CLAIM = "UPDATE django_tasks_database_dbtaskresult SET status = 'RUNNING' WHERE id = %s"
_OURS = "SELECT id FROM tickets_ticket WHERE event_id = %s"


def claim():
    """Claims rows from django_session like Django would."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM oauth2_provider_accesstoken")
        cursor.execute(f"DELETE FROM {DBTaskResult._meta.db_table} WHERE id = %s", [1])
        cursor.execute("SELECT 1 FROM oauth2_provider_newtable")
        cursor.execute(_OURS, [1])
    Ticket.objects.annotate(x=RawSQL("SELECT 1 FROM django_session", []))
    Ticket.objects.raw("SELECT * FROM auth_group")
    Ticket.objects.filter(id=1).update(status="used")
    RefreshToken = get_refresh_token_model()
    RefreshToken.objects.select_for_update().get(pk=1)
    due = DBTaskResult.objects.filter(status="READY")
    due.update(status="RUNNING")
    {}.update(a=1)
    return _insert(DBTaskResult), _insert(Ticket)


def _insert(model):
    return f"INSERT INTO {model._meta.db_table} (id) VALUES (1)"
'''
    )
    assert sorted(foreign_sql(tree, namespace, _table_owners())) == [
        (8, "django_tasks_database_dbtaskresult"),
        (15, "oauth2_provider_accesstoken"),
        (16, "DBTaskResult._meta.db_table"),
        (17, "oauth2_provider_newtable"),
        (19, "django_session"),
        (20, "auth_group"),
        (23, "RefreshToken.select_for_update"),
        (25, "DBTaskResult.update"),
        (27, "DBTaskResult._meta.db_table"),  # through `_insert`
    ]


@pytest.mark.parametrize(
    ("module", "flagged"),
    [
        ("tickets.serializers", True),
        ("tickets.rules", True),
        ("tickets.notifications", True),
        ("webhooks.serializers", True),
        ("tickets.services.gate", False),
        ("tickets.views", False),
        ("tickets.scanner_views", False),
        ("checkin.rules", True),
        ("checkin.services.gate", False),
        ("checkin.views", False),
        ("checkin.scanner_views", False),
        ("checkin.page_views", False),
        ("checkin.admin.tickets", False),
        ("tickets.admin.forms", False),
        ("tickets.management.commands.import_tickets", False),
        ("tickets.tasks", False),
        ("devtools.demo", False),
    ],
)
def test_checker_upward_imports(module, flagged):
    tree = ast.parse(
        """
from .models import Ticket
from tickets.services.scans import GateResult


def url(ticket):
    from tickets import services

    return services
"""
    )
    expected = [(3, "tickets.services"), (7, "tickets.services")] if flagged else []
    assert sorted(upward_imports(module, False, tree)) == expected


def test_checker_relative_imports_resolve():
    tree = ast.parse("from .services.pages import url\nfrom ..services import common\n")
    assert _absolute_imports("tickets.serializers", False, tree) == [
        (1, "tickets.services.pages.url"),
        (2, "services.common"),
    ]
    assert _absolute_imports("tickets.admin", True, tree)[1] == (2, "tickets.services.common")


def test_known_tables_fail_both_ways():
    known = {("a.py", "x"): "why"}
    _check_against_known({("a.py", "x"): ["1"]}, known)
    _check_known_still_there({("a.py", "x"): ["1"]}, known)
    with pytest.raises(AssertionError, match="new violations"):
        _check_against_known({("a.py", "x"): ["1"], ("b.py", "y"): ["2"]}, known)
    with pytest.raises(AssertionError, match="delete their entries"):
        _check_known_still_there({}, known)


# --- Size: a module is read in one sitting, a function on one screen ------------------------

MODULE_LINES, FUNCTION_LINES = 400, 60


def _project_python_files() -> list[Path]:
    """Every Python file of the repository but tests and migrations (bench/ and deploy/ too)."""
    tops = [
        top
        for top in sorted(ROOT.iterdir())
        if top.is_dir()
        and not top.name.startswith(".")
        and top.name not in {"tests", "node_modules"}
    ]
    return [
        *sorted(ROOT.glob("*.py")),
        *(
            path
            for top in tops
            for path in sorted(top.rglob("*.py"))
            if "migrations" not in path.relative_to(ROOT).parts
        ),
    ]


def test_no_module_is_over_400_lines():
    long = {
        str(path.relative_to(ROOT)): lines
        for path in _project_python_files()
        if (lines := len(path.read_text().splitlines())) > MODULE_LINES
    }
    assert long == {}


def test_no_function_is_over_60_lines_outside_the_benchmarks():
    long = {}
    for path in _project_python_files():
        if path.relative_to(ROOT).parts[0] == "bench":
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > FUNCTION_LINES:
                    long[f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"] = lines
    assert long == {}


# --- No import cycle between the modules of one app -----------------------------------------
# Within an app too, imports go one way (issue 41: webhooks' tasks, delivering, outbox and
# outcomes imported each other): a cycle means none of its modules can be read, tested or
# changed without the others. An import inside a function counts, as an app's cycle does; an
# AppConfig's `ready()` is the wiring that may import any module of its app, and a package's
# `__init__` the names it gathers from its own modules.


def _app_module_graph(app: str) -> dict[str, set[str]]:
    """{module: modules of the same app it imports} (a package's `__init__` left out)."""
    modules = {}
    for path, tree in _modules(app):
        modules[_module_name(path)] = (path.name == "__init__.py", tree)
    graph = {}
    for module, (is_package, tree) in modules.items():
        if is_package or module == f"{app}.apps":
            continue
        targets = set()
        for _, name in _absolute_imports(module, is_package, tree):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module and not modules[name][0]:
                targets.add(name)
        graph[module] = targets
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or through others (Tarjan's
    strongly connected components of more than one module), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph.get(module, ())):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = []
            while not group or group[-1] != module:
                group.append(stack.pop())
                on_stack.discard(group[-1])
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)


def test_checker_import_cycles():
    graph = {"a.tasks": {"a.delivering"}, "a.delivering": {"a.outbox"}, "a.outbox": {"a.tasks"}}
    assert import_cycles(graph) == [["a.delivering", "a.outbox", "a.tasks"]]
    assert import_cycles({**graph, "a.outbox": {"a.models"}}) == []


# Cycles found when the rule came (issue 41), in apps other work was reshaping: none left (the
# table only shrinks).
KNOWN_IMPORT_CYCLES: set[tuple[str, ...]] = set()


@functools.cache
def _all_import_cycles() -> dict[tuple[str, ...], list[str]]:
    return {(app, *cycle): cycle for app in APPS for cycle in import_cycles(_app_module_graph(app))}


def test_modules_of_an_app_import_each_other_one_way_only():
    _check_against_known(_all_import_cycles(), KNOWN_IMPORT_CYCLES)


def test_known_import_cycles_are_still_there():
    _check_known_still_there(_all_import_cycles(), KNOWN_IMPORT_CYCLES)
