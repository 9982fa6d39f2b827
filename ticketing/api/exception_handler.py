"""Render every error raised in a DRF view under /api/public in the contract's shape (§2).

This module decides which error a raised exception is; `error_body` builds every body,
`error_causes` tells outages and hostile input from bugs, and `error_pages` answers what
Django handles before or outside a view (this module re-exports them for the settings).
"""

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import DatabaseError
from django.http import Http404
from rest_framework import exceptions as drf
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from .error_body import (
    application_error_body,
    error_body,
    flatten_field_errors,
    invalid_parameters_body,
    request_level_fields,
)
from .error_causes import database_unavailable, hostile_input_error, service_unavailable
from .error_pages import bad_request, not_found, server_error, unknown_route
from .exceptions import (
    ApplicationError,
    Forbidden,
    InsufficientScope,
    InvalidParameters,
    InvalidToken,
    MethodNotAllowed,
    NotFound,
    RateLimited,
)

__all__ = [  # where the settings, the URLs and other apps import them from
    "api_exception_handler",
    "bad_request",
    "database_unavailable",
    "error_body",
    "not_found",
    "server_error",
    "service_unavailable",
    "unknown_route",
]

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


def api_exception_handler(exc, context):
    """DRF's EXCEPTION_HANDLER: our errors, outages, hostile input and DRF's own, each in the
    contract's shape; None (a logged 500 without details) for anything else."""
    if isinstance(exc, ApplicationError):
        response = Response(
            application_error_body(exc), status=exc.status_code, headers=exc.headers
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
        _drf_error(exc, response)
    challenge = _www_authenticate(exc, context.get("request"))
    if challenge:
        response["WWW-Authenticate"] = challenge
    return response


def _drf_error(exc: drf.APIException, response: Response) -> None:
    """DRF's response to one of its exceptions, reshaped to the contract's code and body."""
    code, message = _DRF_CODES.get(type(exc), (None, None))
    if code is None:
        code = next((c for cls, (c, _) in _DRF_CODES.items() if isinstance(exc, cls)), "error")
    if isinstance(exc, drf.ValidationError):
        response.data = invalid_parameters_body(flatten_field_errors(exc.detail))
        response.status_code = 400
        return
    if message is None:
        message = str(exc.detail)
    response.data = error_body(code, message)
    if code == InvalidParameters.code:
        # A body type or Accept we do not speak is malformed input: CONTRACT §2 has no 415 or
        # 406, only 400 `invalid_parameters`.
        response.status_code = 400
        response.data["fields"] = request_level_fields(message)


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
