"""The project's middleware: request ids and one structured log line per request, no caching of
API answers, the API's one language, and Django's browser middleware skipped by bearer-token API
calls.

Every response carries `X-Request-ID`: the caller's own when it sent a sane one (a load balancer
or gateway usually sets it, so one id follows the request through every hop), a fresh one
otherwise. The id is kept in a context variable (`ticketing.logging.request_id_var`) so that
every log record written while the request runs carries it, whichever logger wrote it.

The logging configuration imports nothing of this module (its filters are in `ticketing.logging`):
it is loaded with the apps, so it may import `django.contrib.auth`'s middleware and models.
"""

import logging
import re
import time
import uuid

from django.conf import settings
from django.contrib.auth import middleware as auth_middleware
from django.contrib.messages import middleware as messages_middleware
from django.contrib.sessions import middleware as sessions_middleware
from django.core.signals import request_finished
from django.dispatch import receiver
from django.middleware import csrf
from django.middleware.locale import LocaleMiddleware
from django.utils import translation

from ticketing.logging import loggable_url, request_id_var

REQUEST_ID_HEADER = "X-Request-ID"

# Ids end up in response headers and log lines: printable, short, no spaces, no CR/LF.
_SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:@/+=-]{1,128}")

request_logger = logging.getLogger("ticketing.request")


def _incoming_request_id(request) -> str | None:
    raw = request.META.get("HTTP_X_REQUEST_ID", "")
    return raw if _SANE_REQUEST_ID.fullmatch(raw) else None


class RequestIdMiddleware:
    """Outermost middleware: sets the request id, echoes it, logs the request once it is done.

    It sits first so that the id exists for every later middleware and for Django's own error
    handling, and so that the access line also covers responses other middleware produced.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request_id = _incoming_request_id(request) or uuid.uuid4().hex
        request.request_id = request_id
        # Cleared on request_finished, not here: Django logs 4xx/5xx ("Bad Request: ...") after
        # the middleware chain returns, and that line should carry the id too.
        request_id_var.set(request_id)
        started = time.monotonic()
        response = self.get_response(request)
        response[REQUEST_ID_HEADER] = request_id
        _log_request(request, response.status_code, time.monotonic() - started)
        return response


@receiver(request_finished)
def _forget_request_id(**kwargs) -> None:
    request_id_var.set(None)


def _log_request(request, status: int, elapsed: float) -> None:
    # The decoded path (what was routed) and the names of the query's parameters, not values.
    path = loggable_url(request.path, request.META.get("QUERY_STRING", ""))
    request_logger.info(
        "%s %s %s",
        request.method,
        path,
        status,
        extra={
            "http_method": request.method,
            "http_path": path,
            "http_status": status,
            "duration_ms": round(elapsed * 1000, 1),
        },
    )


class ApiNoStoreMiddleware:
    """`Cache-Control: no-store` on every `/api/public` response that sets no caching of its own.

    API answers carry personal data (holders, emails, reference codes that admit their holder)
    and may be fetched with the token in the query (RFC 6750 §2.3): no shared or browser cache
    may keep them. Errors too: a 404 or 403 tells what exists. `/info` (live status) and the
    OpenAPI document get it as well, as nothing is gained by caching them; only responses that
    chose their own policy (Swagger UI's static files) keep it.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if request.path.startswith("/api/public/") and not response.has_header("Cache-Control"):
            response["Cache-Control"] = "no-store"
        return response


class SiteLocaleMiddleware(LocaleMiddleware):
    """Django's `LocaleMiddleware` for the pages (the ticket page, the admin, sign-in); the API
    answers in `LANGUAGE_CODE` whatever the client's Accept-Language.

    The API's messages are part of its contract (CONTRACT §2): clients log them, tests and
    support compare them, and a gate's tablet set to Thai must not change them.
    """

    def process_request(self, request):
        if request.path_info.startswith("/api/"):
            translation.activate(settings.LANGUAGE_CODE)
            request.LANGUAGE_CODE = translation.get_language()
            return
        super().process_request(request)

    def process_response(self, request, response):
        if request.path_info.startswith("/api/"):
            return response
        return super().process_response(request, response)


# --- Django's browser middleware (session, CSRF, user, messages) ----------------------------


def is_bearer_api_call(request) -> bool:
    """An API call with `Authorization: Bearer`: the token is the whole of its authentication.

    The API authenticates only by token (DRF's views are CSRF-exempt, no session authentication),
    so such a call reads no session, shows no messages and has no user but the token's: the
    browser's middleware below would only cost it time (a tenth of a scan's worker time).
    """
    return (
        request.path_info.startswith("/api/")
        and request.META.get("HTTP_AUTHORIZATION", "")[:7].lower() == "bearer "
    )


class _BrowserOnly:
    """Mixin for a Django middleware that bearer-token API calls pass straight through."""

    def __call__(self, request):
        if is_bearer_api_call(request):
            return self.get_response(request)
        return super().__call__(request)


class SessionMiddleware(_BrowserOnly, sessions_middleware.SessionMiddleware):
    """Django's, for everything but bearer-token API calls."""


class CsrfViewMiddleware(_BrowserOnly, csrf.CsrfViewMiddleware):
    """Django's, for everything but bearer-token API calls (whose views are exempt anyway)."""

    def process_view(self, request, callback, callback_args, callback_kwargs):
        if is_bearer_api_call(request):
            return None
        return super().process_view(request, callback, callback_args, callback_kwargs)


class AuthenticationMiddleware(_BrowserOnly, auth_middleware.AuthenticationMiddleware):
    """Django's, for everything but bearer-token API calls (DRF sets their `user`)."""


class MessageMiddleware(_BrowserOnly, messages_middleware.MessageMiddleware):
    """Django's, for everything but bearer-token API calls."""
