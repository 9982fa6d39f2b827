"""Render every error under /api/public in the contract's shape (CONTRACT §2).

`{"success": false, "error": <code>, "message": <sentence>, "fields"?: {...}, "ticket"?: {...}}`
"""

import logging
import sys

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import (
    RequestDataTooBig,
    SuspiciousOperation,
    TooManyFieldsSent,
    TooManyFilesSent,
)
from django.db import DatabaseError, DataError, InterfaceError, OperationalError
from django.http import Http404, HttpResponse, HttpResponsePermanentRedirect, JsonResponse
from django.urls import is_valid_path
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions as drf
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from ticketing.db import TIMEOUT_SQLSTATE, TRANSIENT_SQLSTATES, sqlstate_of

from .exceptions import (
    ApplicationError,
    Forbidden,
    InsufficientScope,
    InvalidParameters,
    InvalidToken,
    MethodNotAllowed,
    NotFound,
    RateLimited,
    ServerError,
    ServiceUnavailable,
)

logger = logging.getLogger("ticketing.api")

# DRF's own exceptions, as the contract's codes: (code, message; None: DRF's message).
_DRF_CODES = {
    drf.ParseError: (InvalidParameters.code, "The request body could not be parsed."),
    drf.UnsupportedMediaType: (InvalidParameters.code, "Unsupported request content type."),
    drf.NotAuthenticated: (InvalidToken.code, InvalidToken.default_message),
    drf.AuthenticationFailed: (InvalidToken.code, InvalidToken.default_message),
    drf.PermissionDenied: (Forbidden.code, Forbidden.default_message),
    drf.NotFound: (NotFound.code, NotFound.default_message),
    drf.MethodNotAllowed: (MethodNotAllowed.code, None),
    drf.NotAcceptable: (
        InvalidParameters.code,
        "Cannot produce a response in the requested format.",
    ),
    drf.Throttled: (RateLimited.code, None),
}


def _flatten_field_errors(detail) -> dict:
    """DRF nests errors per field; the contract wants `{"field": ["message", ...]}`."""
    if isinstance(detail, dict):
        fields = {}
        for name, errors in detail.items():
            if isinstance(errors, dict):
                for sub, value in _flatten_field_errors(errors).items():
                    fields[f"{name}.{sub}"] = value
            elif isinstance(errors, list):
                fields[name] = [str(e) for e in errors if not isinstance(e, dict | list)] or [
                    str(errors)
                ]
            else:
                fields[name] = [str(errors)]
        return fields
    if isinstance(detail, list):
        return {"non_field_errors": [str(e) for e in detail]}
    return {"non_field_errors": [str(detail)]}


def _request_level_fields(message: str) -> dict:
    """Every 400 carries `fields` (CONTRACT §2); a fault of the whole request names no field."""
    return {"non_field_errors": [message]}


def _fields_message(fields: dict) -> str:
    name, errors = next(iter(fields.items()))
    label = "Request" if name == "non_field_errors" else f"Parameter '{name}'"
    return f"{label}: {errors[0]}" if errors else "Some parameters are invalid."


def error_body(code: str, message: str, **extra) -> dict:
    return {"success": False, "error": code, "message": message, **extra}


def _www_authenticate(exc: Exception, request) -> str | None:
    if isinstance(exc, InsufficientScope):
        return f'Bearer error="insufficient_scope", scope="{exc.scope}"'
    if getattr(exc, "status_code", None) == 401:
        sent_token = request is not None and _request_sent_token(request)
        return 'Bearer error="invalid_token"' if sent_token else "Bearer"
    return None


def _request_sent_token(request) -> bool:
    if request.META.get("HTTP_AUTHORIZATION"):
        return True
    return bool(request.GET.get("access_token")) or bool(
        getattr(request, "_sent_body_token", False)
    )


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


def api_exception_handler(exc, context):
    request = context.get("request")

    if isinstance(exc, ApplicationError):
        extra = exc.extra
        if exc.status_code == 400 and "fields" not in extra:
            extra = {**extra, "fields": _request_level_fields(exc.message)}
        response = Response(
            error_body(exc.code, exc.message, **extra),
            status=exc.status_code,
            headers=exc.headers,
        )
        set_rollback()
    elif (unavailable := service_unavailable(exc)) is not None:
        return api_exception_handler(unavailable, context)
    elif (invalid := hostile_input_error(exc)) is not None:
        return api_exception_handler(invalid, context)
    elif isinstance(exc, DatabaseError):
        return None  # a bug, not an outage: a logged 500 without details
    else:
        if isinstance(exc, Http404):
            exc = drf.NotFound()
        elif isinstance(exc, DjangoPermissionDenied):
            exc = drf.PermissionDenied()
        response = drf_exception_handler(exc, context)  # headers (Allow, Retry-After), rollback
        if response is None:
            return None
        code, message = _DRF_CODES.get(type(exc), (None, None))
        if code is None:
            code = next((c for cls, (c, _) in _DRF_CODES.items() if isinstance(exc, cls)), "error")
        if isinstance(exc, drf.ValidationError):
            fields = _flatten_field_errors(exc.detail)
            response.data = error_body(
                InvalidParameters.code, _fields_message(fields), fields=fields
            )
            response.status_code = 400
        else:
            if message is None:
                message = str(exc.detail)
            response.data = error_body(code, message)
            if code == InvalidParameters.code:
                # A body type or Accept we do not speak is malformed input: CONTRACT §2 has
                # no 415 or 406, only 400 `invalid_parameters`.
                response.status_code = 400
                response.data["fields"] = _request_level_fields(message)

    challenge = _www_authenticate(exc, request)
    if challenge:
        response["WWW-Authenticate"] = challenge
    return response


def _is_api(request) -> bool:
    return request.path.startswith("/api/public/")


def _no_such_endpoint() -> JsonResponse:
    return JsonResponse(error_body(NotFound.code, "No such endpoint."), status=404)


@csrf_exempt  # no view to protect: a POST gets the same 404 as a GET
def unknown_route(request):
    """The last route under /api/public: any path no other route matches, any method.

    A route rather than `handler404`, because with DEBUG on Django answers a path that matches
    no route with its HTML debug page and never calls `handler404` (CONTRACT §2: one shape
    whatever DEBUG is). Matching every path also stops CommonMiddleware's APPEND_SLASH, so a
    GET of a route without its trailing slash (`/api/public/docs`) is redirected here instead.
    """
    if (
        request.method in ("GET", "HEAD")
        and settings.APPEND_SLASH
        and not request.path_info.endswith("/")
    ):
        match = is_valid_path(f"{request.path_info}/", getattr(request, "urlconf", None))
        if match and match.func is not unknown_route:
            return HttpResponsePermanentRedirect(request.get_full_path(force_append_slash=True))
    return _no_such_endpoint()


def not_found(request, exception=None):
    """Django-level 404 (an Http404 raised outside DRF): JSON under /api/public, HTML elsewhere."""
    if _is_api(request):
        return _no_such_endpoint()
    return defaults.page_not_found(request, exception)


def bad_request(request, exception=None):
    """Suspicious or oversized requests rejected before any view ran."""
    if _is_api(request):
        return JsonResponse(
            error_body(
                InvalidParameters.code,
                "Bad request.",
                fields=_request_level_fields("Bad request."),
            ),
            status=400,
        )
    return defaults.bad_request(request, exception)


def server_error(request):
    """Django-level 500: an exception no view handled (middleware, token lookup, a bug).

    Django calls this inside its `except` block, so the exception is at hand: a database
    outage (or a revocation the token cache cannot record) raised outside a DRF view is still
    a 503 with Retry-After, never a 500.
    """
    unavailable = service_unavailable(sys.exc_info()[1])
    if unavailable is not None:
        if _is_api(request) or request.path == "/healthz":
            response = JsonResponse(error_body(unavailable.code, unavailable.message), status=503)
        else:
            response = HttpResponse(
                unavailable.message, status=503, content_type="text/plain; charset=utf-8"
            )
        for name, value in unavailable.headers.items():
            response[name] = value
        return response
    if _is_api(request):
        return JsonResponse(
            error_body(ServerError.code, ServerError.default_message),
            status=500,
        )
    return defaults.server_error(request)
