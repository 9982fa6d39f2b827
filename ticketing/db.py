"""What the services and the exception handler share about database errors."""

import functools
import logging
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from django.db import DEFAULT_DB_ALIAS, OperationalError, connections, transaction

logger = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

# Serialization failure, deadlock, lock not available: a conflict with a concurrent transaction,
# which another try is likely to win (CONTRACT §2: a 503 only if it persists).
TRANSIENT_SQLSTATES = frozenset({"40001", "40P01", "55P03"})
TIMEOUT_SQLSTATE = "57014"  # statement timeout (query_canceled)


def sqlstate_of(exc: BaseException) -> str | None:
    """The SQLSTATE of a Django database error (the driver's error is its cause)."""
    return getattr(exc.__cause__, "sqlstate", None)


def is_transient(exc: BaseException) -> bool:
    return isinstance(exc, OperationalError) and sqlstate_of(exc) in TRANSIENT_SQLSTATES


def atomic_retrying_once(func: Callable[P, R]) -> Callable[P, R]:
    """`transaction.atomic`, run once more after a serialization failure or deadlock.

    Only an outermost transaction can be retried: inside a caller's transaction the whole
    transaction is lost, so the error goes up (and becomes a 503 at the API).
    """

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        may_retry = not transaction.get_connection().in_atomic_block
        while True:
            try:
                with transaction.atomic():
                    return func(*args, **kwargs)
            except OperationalError as exc:
                if not (may_retry and is_transient(exc)):
                    raise
                logger.info("retrying %s after %s", func.__name__, exc.__cause__.__class__.__name__)
                may_retry = False

    return wrapper


@contextmanager
def planned_for_their_values(using: str = DEFAULT_DB_ALIAS) -> Iterator[None]:
    """Statements run inside are not prepared, so PostgreSQL plans each for its values.

    The settings prepare every statement run twice on a connection, and after five runs
    PostgreSQL may keep one generic plan for all values. For `col LIKE $1` that plan cannot
    know the pattern: it reads every ticket of the event (40 ms at 20,000) where the pattern's
    own plan finds the few matches on the trigram index (1 ms).
    """
    connection = connections[using]
    if connection.vendor != "postgresql":
        yield
        return
    connection.ensure_connection()
    driver_connection = connection.connection
    threshold = driver_connection.prepare_threshold
    driver_connection.prepare_threshold = None  # psycopg: neither prepare nor use prepared
    try:
        yield
    finally:
        driver_connection.prepare_threshold = threshold


# --- Plain statements that load model instances ---------------------------------------------
# The ORM compiles a query anew each time it runs; on the hottest reads (an event, a ticket by
# its code) that compilation costs more than the statement's round trip. These build the same
# instances from a hand-written statement: its select list from the model's fields, its values
# through the same converters the ORM applies (SQLite returns text for dates and times).


@functools.cache
def select_list(model, table_alias: str) -> str:
    """`alias.column, ...` of every concrete field of `model`, in `from_row`'s order."""
    return ", ".join(f"{table_alias}.{field.column}" for field in model._meta.concrete_fields)


@functools.cache
def _row_reading(model, using: str) -> tuple[list[str], list[tuple]]:
    """The attnames of `from_row`, and the columns the backend converts (found once; the
    converters themselves are asked of the calling connection, since a cached one would keep
    its thread's connection alive)."""
    connection = connections[using]
    fields = model._meta.concrete_fields
    converted = []
    for position, field in enumerate(fields):
        column = field.get_col(model._meta.db_table)
        if connection.ops.get_db_converters(column) + column.get_db_converters(connection):
            converted.append((position, column))
    return [field.attname for field in fields], converted


def from_row(model, row, *, start: int = 0, using: str = DEFAULT_DB_ALIAS):
    """The instance of `model` whose `select_list` begins at `row[start]`, as the ORM loads it."""
    connection = connections[using]
    attnames, converted = _row_reading(model, using)
    values = list(row[start : start + len(attnames)])
    for position, column in converted:
        value = values[position]
        functions = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
        for function in functions:
            value = function(value, column, connection)
        values[position] = value
    return model.from_db(using, attnames, values)


class CompiledOnce:
    """A query the ORM compiles once per shape; later calls bind their values to that SQL.

    `build(**values)` declares the query (the one place its rules live); on the hottest reads
    compiling it again for every request costs several times the statement's round trip. Values
    are ints and strings, or None; whatever else changes the SQL goes in `shape` (keywords
    `build` also receives). The first call
    of a shape builds the query with placeholder values and finds where each lands among the
    statement's parameters; a value that does not reach the statement as itself (a pattern
    built from it, say) is refused there, so such a query cannot be cached by mistake.

    An int may also be a slice's start (`queryset[offset : offset + n]`, `n` in the shape): the
    ORM writes it into the SQL as a literal, which is bound in its place instead, so that every
    page shares one statement (and PostgreSQL one prepared plan).

    Rows become instances as the ORM makes them (`select_related` included, annotations as
    attributes); `prefetch_related` is not run.
    """

    _FIRST_INT = 1_900_000_000  # within int32, so the placeholders bind as the values would

    def __init__(self, build: Callable[..., object]):
        self._build = build
        self._compiled: dict = {}

    def __call__(self, *, shape: dict | None = None, using: str = DEFAULT_DB_ALIAS, **values):
        shape = shape or {}
        key = (
            using,
            tuple(sorted(shape.items())),
            tuple((name, values[name] is None) for name in sorted(values)),
        )
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = self._compiled[key] = self._compile(using, shape, values)
        sql, slots, query, state, populate = compiled
        params = [values[slot] if named else slot for named, slot in slots]
        with connections[using].cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        # A compiler of this call's connection, told what the first compilation found: it only
        # converts the rows (a cached compiler would keep its thread's connection alive).
        compiler = query.get_compiler(using=using)
        compiler.select, compiler.klass_info, compiler.annotation_col_map, compiler.col_count = (
            state
        )
        return [populate(row) for row in compiler.results_iter([rows])]

    def _compile(self, using: str, shape: dict, values: dict):
        from django.db.models.query import get_related_populators

        placeholders, names = {}, {}
        for number, name in enumerate(sorted(values)):
            if values[name] is None:
                placeholders[name] = None
                continue
            if isinstance(values[name], bool) or not isinstance(values[name], int | str):
                raise TypeError(f"{name}: only ints, strings and None are bound; shape the rest")
            placeholder = (
                self._FIRST_INT + number
                if isinstance(values[name], int)
                else f"\x1e{number}:{name}\x1e"
            )
            placeholders[name] = placeholder
            names[(type(placeholder), placeholder)] = name
        queryset = self._build(**shape, **placeholders).using(using)
        compiler = queryset.query.get_compiler(using=using)
        sql, params = compiler.as_sql()
        sql, params = _literals_bound(sql, list(params), placeholders)
        slots, bound = [], set()
        for param in params:
            name = names.get((type(param), param))
            if name is not None:
                slots.append((True, name))
                bound.add(name)
            elif any(str(p) in str(param) for p in placeholders.values() if p is not None):
                raise ValueError(f"a value reaches the statement changed: {param!r}")
            else:
                slots.append((False, param))
        missing = {name for name, p in placeholders.items() if p is not None} - bound
        if missing:
            raise ValueError(f"values that do not reach the statement: {sorted(missing)}")

        select, klass_info = compiler.select, compiler.klass_info
        annotations = compiler.annotation_col_map or {}
        model = klass_info["model"]
        start, end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
        attnames = [column[0].target.attname for column in select[start:end]]
        related = get_related_populators(klass_info, select, using)

        def populate(row):
            instance = model.from_db(using, attnames, row[start:end])
            for populator in related:
                populator.populate(row, instance)
            for name, position in annotations.items():
                setattr(instance, name, row[position])
            return instance

        state = (select, klass_info, compiler.annotation_col_map, compiler.col_count)
        return sql, slots, queryset.query, state, populate


_PARAMETER = re.compile(r"%[%s]")


def _literals_bound(sql: str, params: list, placeholders: dict) -> tuple[str, list]:
    """`sql` with each int placeholder that the ORM wrote as a literal (a LIMIT's OFFSET) made a
    parameter, inserted in `params` at its position."""
    for placeholder in placeholders.values():
        if not isinstance(placeholder, int):
            continue
        literal = re.compile(rf"(?<![\w.]){placeholder}(?![\w.])")
        found = list(literal.finditer(sql))
        if not found:
            continue
        if len(found) > 1:
            raise ValueError(f"a value is written into the statement more than once: {placeholder}")
        start, end = found[0].span()
        position = sum(1 for m in _PARAMETER.finditer(sql, 0, start) if m.group() == "%s")
        sql = f"{sql[:start]}%s{sql[end:]}"
        params.insert(position, placeholder)
    return sql, params
