"""What the services and the exception handler share about database errors."""

import functools
import logging
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
