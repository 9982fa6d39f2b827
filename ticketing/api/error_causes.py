"""Which errors raised below the API are not bugs: an outage (503) or hostile input (400).

Read by the DRF exception handler and by the Django-level error views, so that either answers
them alike (CONTRACT §2).
"""

import logging

from django.core.exceptions import (
    RequestDataTooBig,
    SuspiciousOperation,
    TooManyFieldsSent,
    TooManyFilesSent,
)
from django.db import DataError, InterfaceError, OperationalError

from ticketing.db import TIMEOUT_SQLSTATE, TRANSIENT_SQLSTATES, sqlstate_of

from .exceptions import InvalidParameters, ServiceUnavailable

logger = logging.getLogger("ticketing.api")


def database_unavailable(exc: BaseException) -> ServiceUnavailable | None:
    """The 503 for a database error that is an outage or a transient conflict, else None.

    Connection refused or lost, a statement timeout and a serialization failure or deadlock
    (after the service's own retry) say nothing about the request: the client should retry.
    Any other database error is a bug and stays a logged 500.
    """
    if not isinstance(exc, OperationalError | InterfaceError):
        return None
    sqlstate = sqlstate_of(exc)
    logger.warning("database unavailable: %s (sqlstate %s)", exc.__class__.__name__, sqlstate)
    if sqlstate in TRANSIENT_SQLSTATES:
        return ServiceUnavailable(
            "The request conflicted with a concurrent one; try again.", retry_after=1
        )
    if sqlstate == TIMEOUT_SQLSTATE:
        return ServiceUnavailable("The database took too long to answer; try again shortly.")
    return ServiceUnavailable()


def service_unavailable(exc: BaseException) -> ServiceUnavailable | None:
    """The 503 for an outage: of the database, or one a service reports (`ServiceUnavailable`:
    the token cache, where it must not fail open), also when raised outside a DRF view."""
    if isinstance(exc, ServiceUnavailable):
        return exc
    return database_unavailable(exc)


def hostile_input_error(exc: BaseException) -> InvalidParameters | None:
    """The 400 for input that reached a layer below validation, else None.

    Django refuses bodies over DATA_UPLOAD_MAX_MEMORY_SIZE and forms with too many fields;
    `json` gives up on deeply nested documents with RecursionError (a body or a `q` filter);
    PostgreSQL refuses a value its column cannot hold (a NUL byte in text, an integer out of
    range) with DataError. Each is the caller's input, not our fault.
    """
    if isinstance(exc, RequestDataTooBig):
        return InvalidParameters("The request body is too large.")
    if isinstance(exc, TooManyFieldsSent | TooManyFilesSent):
        return InvalidParameters("The request has too many fields.")
    if isinstance(exc, RecursionError):
        return InvalidParameters("The input is nested too deeply.")
    if isinstance(exc, DataError):
        logger.warning("input refused by the database: %s", exc.__cause__.__class__.__name__)
        return InvalidParameters("A parameter holds a value that cannot be stored or searched.")
    if isinstance(exc, SuspiciousOperation):
        return InvalidParameters("Bad request.")
    return None
