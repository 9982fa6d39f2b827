"""Request ids and one structured log line per request; no caching of API answers.

Every response carries `X-Request-ID`: the caller's own when it sent a sane one (a load balancer
or gateway usually sets it, so one id follows the request through every hop), a fresh one
otherwise. The id is kept in a context variable so that every log record written while the
request runs carries it, whichever logger wrote it.
"""

import contextvars
import logging
import re
import time
import uuid

from django.conf import settings
from django.core.signals import request_finished
from django.dispatch import receiver
from django.middleware.locale import LocaleMiddleware
from django.utils import translation

from ticketing.logging import loggable_url

REQUEST_ID_HEADER = "X-Request-ID"

# Ids end up in response headers and log lines: printable, short, no spaces, no CR/LF.
_SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:@/+=-]{1,128}")

_request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)

request_logger = logging.getLogger("ticketing.request")


def current_request_id() -> str | None:
    return _request_id.get()


def _incoming_request_id(request) -> str | None:
    raw = request.META.get("HTTP_X_REQUEST_ID", "")
    return raw if _SANE_REQUEST_ID.fullmatch(raw) else None


class RequestIdFilter(logging.Filter):
    """Stamp every record with the id of the request being served (`-` outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "request_id", None):
            record.request_id = _request_id.get() or "-"
        return True


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
        _request_id.set(request_id)
        started = time.monotonic()
        response = self.get_response(request)
        response[REQUEST_ID_HEADER] = request_id
        _log_request(request, response.status_code, time.monotonic() - started)
        return response


@receiver(request_finished)
def _forget_request_id(**kwargs) -> None:
    _request_id.set(None)


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
