"""Render every error under /api/public in the contract's shape (CONTRACT §2).

`{"success": false, "error": <code>, "message": <sentence>, "fields"?: {...}, "ticket"?: {...}}`
"""

import logging

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import Http404, JsonResponse
from django.views import defaults
from rest_framework import exceptions as drf
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from .exceptions import ApplicationError, InsufficientScope, InvalidToken, ServiceUnavailable

logger = logging.getLogger("ticketing.api")

_DRF_CODES = {
    drf.ParseError: ("invalid_parameters", "The request body could not be parsed."),
    drf.UnsupportedMediaType: ("invalid_parameters", "Unsupported request content type."),
    drf.NotAuthenticated: ("invalid_token", InvalidToken.default_message),
    drf.AuthenticationFailed: ("invalid_token", InvalidToken.default_message),
    drf.PermissionDenied: ("forbidden", "You may not do this."),
    drf.NotFound: ("not_found", "Not found."),
    drf.MethodNotAllowed: ("method_not_allowed", None),
    drf.NotAcceptable: ("invalid_parameters", "Cannot produce a response in the requested format."),
    drf.Throttled: ("rate_limited", None),
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


def api_exception_handler(exc, context):
    request = context.get("request")

    if isinstance(exc, ApplicationError):
        response = Response(
            error_body(exc.code, exc.message, **exc.extra),
            status=exc.status_code,
            headers=exc.headers,
        )
        set_rollback()
    elif isinstance(exc, OperationalError | InterfaceError):
        logger.warning("database unavailable: %s", exc.__class__.__name__)
        return api_exception_handler(ServiceUnavailable(), context)
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
            response.data = error_body("invalid_parameters", _fields_message(fields), fields=fields)
            response.status_code = 400
        else:
            if message is None:
                message = str(exc.detail)
            response.data = error_body(code, message)

    challenge = _www_authenticate(exc, request)
    if challenge:
        response["WWW-Authenticate"] = challenge
    return response


def _is_api(request) -> bool:
    return request.path.startswith("/api/public/")


def not_found(request, exception=None):
    """Django-level 404: JSON for /api/public paths that match no route, HTML elsewhere."""
    if _is_api(request):
        return JsonResponse(error_body("not_found", "No such endpoint."), status=404)
    return defaults.page_not_found(request, exception)


def bad_request(request, exception=None):
    """Suspicious or oversized requests rejected before any view ran."""
    if _is_api(request):
        return JsonResponse(error_body("invalid_parameters", "Bad request."), status=400)
    return defaults.bad_request(request, exception)


def server_error(request):
    if _is_api(request):
        return JsonResponse(
            error_body("server_error", "Something went wrong on our side; it has been logged."),
            status=500,
        )
    return defaults.server_error(request)
