"""The error hierarchy every app raises; `exception_handler` is the only place that renders it.

Each subclass carries the HTTP status and the stable `error` code of CONTRACT §2. Extra keyword
arguments become fields of the error body (`fields`, `ticket`) or, for `headers`, response
headers. The classes are also the one list of the codes (`api_error_codes`): the OpenAPI
document and the tests read it. Each app declares its own in `<app>/exceptions.py`, which
`TicketingConfig.ready` imports, so that the list is complete once Django has started.
"""

from collections import defaultdict
from typing import Any


class ApplicationError(Exception):
    status_code = 400
    code = "invalid_parameters"
    default_message = "The request could not be processed."

    def __init_subclass__(cls, *, listed: bool = True, **kwargs: Any):
        """`listed=False`: a code the API never answers with (the base class of a status, or
        an error only the admin and the commands meet), so not one of `api_error_codes`."""
        super().__init_subclass__(**kwargs)
        cls._listed = listed and "code" in cls.__dict__

    def __init__(
        self, message: str | None = None, *, headers: dict[str, str] | None = None, **extra: Any
    ):
        self.message = message or self.default_message
        self.headers = headers or {}
        self.extra = extra
        super().__init__(self.message)


class InvalidParameters(ApplicationError):
    status_code = 400
    code = "invalid_parameters"
    default_message = "Some parameters are missing or invalid."


class InvalidToken(ApplicationError):
    status_code = 401
    code = "invalid_token"
    default_message = "The access token is missing, malformed, expired or revoked."


class OrganizerMismatch(ApplicationError):
    status_code = 401
    code = "organizer_mismatch"
    default_message = "This token was issued through another organizer's application."


class InsufficientScope(ApplicationError):
    status_code = 403
    code = "insufficient_scope"

    def __init__(self, scope: str, message: str | None = None):
        super().__init__(message or f"This call needs the '{scope}' scope.")
        self.scope = scope


class ApplicationNotOwned(ApplicationError):
    status_code = 403
    code = "application_not_owned"
    default_message = "This application is not owned by the organizer."


class NotOrganizerMember(ApplicationError):
    status_code = 403
    code = "not_organizer_member"
    default_message = "You are not a member of this organizer."


class UserTokenRequired(ApplicationError):
    status_code = 403
    code = "user_token_required"
    default_message = (
        "This call needs a user token (authorization code grant), not an application token."
    )


class NotFound(ApplicationError):
    status_code = 404
    code = "not_found"
    default_message = "Not found."


class Forbidden(ApplicationError):
    """What Django or DRF refuse on their own (`PermissionDenied`); no rule of ours raises it."""

    status_code = 403
    code = "forbidden"
    default_message = "You may not do this."


class MethodNotAllowed(ApplicationError):
    status_code = 405
    code = "method_not_allowed"
    default_message = "Method not allowed."


class Conflict(ApplicationError, listed=False):
    status_code = 409
    code = "conflict"


class Unprocessable(ApplicationError, listed=False):
    status_code = 422
    code = "unprocessable"


class RateLimited(ApplicationError):
    status_code = 429
    code = "rate_limited"
    default_message = "Too many requests; slow down."

    def __init__(self, retry_after: int, message: str | None = None):
        retry_after = max(1, int(retry_after))
        super().__init__(
            message or f"Too many requests; try again in {retry_after} seconds.",
            headers={"Retry-After": str(retry_after)},
        )


class ServiceUnavailable(ApplicationError):
    status_code = 503
    code = "service_unavailable"
    default_message = "The service is briefly unavailable; try again shortly."

    def __init__(self, message: str | None = None, retry_after: int = 5):
        super().__init__(message, headers={"Retry-After": str(retry_after)})


class ServerError(ApplicationError):
    """A bug: never raised, only rendered (logged, no details in the body)."""

    status_code = 500
    code = "server_error"
    default_message = "Something went wrong on our side; it has been logged."


def api_error_codes() -> dict[int, list[str]]:
    """`{status: [code, ...]}` of every error the API can answer with, in status order."""
    codes: dict[int, set[str]] = defaultdict(set)
    pending = [ApplicationError]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls.__dict__.get("_listed", cls is ApplicationError):
            codes[cls.status_code].add(cls.code)
    return {status: sorted(codes[status]) for status in sorted(codes)}
