"""Request ids and one structured log line per request.

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

from django.core.signals import request_finished
from django.dispatch import receiver

from ticketing.logging import scrub

REQUEST_ID_HEADER = "X-Request-ID"

# Ids end up in response headers and log lines: printable, short, no spaces, no CR/LF.
_SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:@/+=-]{1,128}")

# Control characters in a logged path would let a caller forge log lines in plain-text logs.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

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
    # The path is logged without the query string's secrets: tokens may ride in `access_token`.
    query = request.META.get("QUERY_STRING", "")
    path = request.path + (f"?{scrub(query)}" if query else "")
    path = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", path)
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
