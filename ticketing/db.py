"""What the services and the exception handler share about database errors."""

import functools
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from decimal import Decimal
from typing import ParamSpec, TypeVar

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, OperationalError, connections, models, transaction
from django.utils import timezone

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
# instances from a hand-written statement on our own tables: its select list from the model's
# fields, its values converted by the fields' public API (SQLite returns text for times).


@functools.cache
def select_list(model, table_alias: str) -> str:
    """`alias.column, ...` of every concrete field of `model`, in `from_row`'s order."""
    return ", ".join(f"{table_alias}.{field.column}" for field in model._meta.concrete_fields)


@functools.cache
def _row_converters(model, vendor: str) -> tuple[list[str], list[tuple[int, Callable]]]:
    """The attnames of `from_row`, and a converter for each column the backend returns in
    another type than the field's: a field's own `from_db_value` (JSON), and on SQLite, which
    returns text for times and numbers for booleans, the field's `to_python`."""
    converters = []
    for position, field in enumerate(model._meta.concrete_fields):
        if hasattr(field, "from_db_value"):
            converters.append((position, field.from_db_value))
        elif vendor == "sqlite" and not isinstance(field, _NATIVE_ON_SQLITE):
            converters.append((position, functools.partial(_sqlite_value, field)))
    return [field.attname for field in model._meta.concrete_fields], converters


# Fields whose values SQLite returns as the ORM would load them.
_NATIVE_ON_SQLITE = (models.CharField, models.TextField, models.IntegerField, models.FileField)


def _sqlite_value(field, value, expression, connection):
    """A SQLite value as the ORM converts it: a time in UTC (how SQLite's rows store it), a
    decimal at its field's places."""
    value = field.to_python(value)
    if isinstance(value, datetime) and settings.USE_TZ and timezone.is_naive(value):
        return value.replace(tzinfo=UTC)
    if isinstance(value, Decimal) and field.decimal_places is not None:
        return value.quantize(Decimal(1).scaleb(-field.decimal_places))
    return value


def from_row(model, row, *, start: int = 0, using: str = DEFAULT_DB_ALIAS):
    """The instance of `model` whose `select_list` begins at `row[start]`, as the ORM loads it."""
    connection = connections[using]
    attnames, converters = _row_converters(model, connection.vendor)
    values = list(row[start : start + len(attnames)])
    for position, convert in converters:
        if values[position] is not None:
            values[position] = convert(values[position], None, connection)
    return model.from_db(using, attnames, values)


# --- Plain INSERT clauses, written as the ORM writes the row -------------------------------

_AUTO_FIELDS = (models.AutoField, models.BigAutoField, models.SmallAutoField)


@functools.cache
def insert_fields(model) -> tuple[models.Field, ...]:
    """The fields an INSERT of `model` writes: every concrete field but an automatic key (a
    model's fields are fixed once the apps are loaded; the gate asks on every admission)."""
    return tuple(f for f in model._meta.concrete_fields if not isinstance(f, _AUTO_FIELDS))


def insert_sql(
    model, *, name: str, source: str, values: dict[str, str], returning: str | None = None
) -> str:
    """A clause of a WITH, `{name} AS (INSERT ... SELECT ... FROM {source})`, that inserts a row
    of `model` for each row of `source`: each column the parameter `%({name}_{column})s`
    (`insert_params`), unless `values` gives an SQL expression for it over `source`, or None:
    the column's default (a shorter text)."""
    fields = [f for f in insert_fields(model) if values.get(f.column, "") is not None]
    connection = connections[DEFAULT_DB_ALIAS]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    selected = ", ".join(values.get(f.column, f"%({name}_{f.column})s") for f in fields)
    table = connection.ops.quote_name(model._meta.db_table)
    tail = f"\n  RETURNING {returning}" if returning else ""
    insert = f"INSERT INTO {table} ({columns})\n  SELECT {selected} FROM {source}{tail}"
    return f"{name} AS (\n  {insert}\n)"


def insert_params(instance, *, name: str, using: str = DEFAULT_DB_ALIAS) -> dict:
    """The parameters of `insert_sql` for `instance` (unsaved): each field's value as the ORM
    prepares it for an INSERT (`pre_save`, which sets a default or `auto_now` on `instance`,
    then `get_db_prep_save`)."""
    connection = connections[using]
    return {
        f"{name}_{f.column}": f.get_db_prep_save(f.pre_save(instance, add=True), connection)
        for f in insert_fields(type(instance))
    }
