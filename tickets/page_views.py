"""The attendee's ticket page and its QR images (CONTRACT §14): no login, the token is the key.

The page is the holder's alone: `noindex` (header and meta), never stored by shared caches, and
a Content-Security-Policy that allows nothing but this site's images and the page's own inline
stylesheet (by hash): no scripts at all, no third-party resource. Language: the browser's
(LocaleMiddleware), or the one picked with the page's `?lang=` links, which need no script.
"""

import base64
import hashlib
import re
import time
from pathlib import Path

from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import render
from django.utils import timezone, translation
from django.utils.cache import get_conditional_response, patch_cache_control
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_safe

from ticketing.api.throttling import count_and_read_counters, rate_counter

from .calendar import ticket_ics
from .event_times import event_times
from .models import Ticket
from .pdf import ticket_pdf as pdf_of_ticket
from .qr import qr_etag, qr_png, qr_svg
from .services.pages import ticket_for_page
from .signed_codes import ticket_qr_data
from .wallet import ticket_pkpass, wallet_enabled

# What `codes.page_token_generate` makes is 32 of these; anything else is not looked up.
_TOKEN = re.compile(r"[A-Za-z0-9_-]{16,64}")

_CSS = (Path(__file__).parent / "templates" / "tickets" / "page" / "page.css").read_text()
_CSS_HASH = base64.b64encode(hashlib.sha256(_CSS.encode()).digest()).decode()
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; img-src 'self'; "
    f"style-src 'sha256-{_CSS_HASH}'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
ROBOTS = "noindex, nofollow, noarchive"
# A code's QR images never change; their URL holds the private token: only browsers keep them.
QR_MAX_AGE = 60 * 60 * 24


def _ticket(token: str) -> Ticket | None:
    return ticket_for_page(token=token) if _TOKEN.fullmatch(token) else None


def _private(response: HttpResponse) -> HttpResponse:
    response["X-Robots-Tag"] = ROBOTS
    response["Referrer-Policy"] = "no-referrer"  # the token must not leave in a Referer
    response.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
    return response


def _language(request) -> str:
    """The page's `?lang=` where given, else the browser's (LocaleMiddleware's choice)."""
    lang = request.GET.get("lang")
    if lang in dict(settings.LANGUAGES):
        translation.activate(lang)
        request.LANGUAGE_CODE = lang
    return translation.get_language()


@require_safe
def ticket_page(request, token: str) -> HttpResponse:
    _language(request)
    ticket = _ticket(token)
    context = {
        "css": mark_safe(_CSS),
        "languages": settings.LANGUAGES,
        "robots": ROBOTS,
    }
    if ticket is None:
        response = render(request, "tickets/page/not_found.html", context, status=404)
    else:
        event = ticket.event
        context |= {
            "ticket": ticket,
            "event": event,
            "organizer": event.organizer,
            "start_at": timezone.localtime(event.start_at),
            "end_at": timezone.localtime(event.end_at),
            "when": event_times(event.start_at, event.end_at),
            "wallet": wallet_enabled(),
            "used_at": ticket.used_at and timezone.localtime(ticket.used_at),
            "time_zone": timezone.get_current_timezone_name(),
            "place": event.display_location_name,
            "revoked": ticket.status == Ticket.Status.REVOKED,
            "used": ticket.status == Ticket.Status.USED,
            # In the image's URL: a browser keeps an image a day, and the code changes with a
            # key rotation or the event's setting (CONTRACT §14).
            "qr_version": qr_etag(ticket_qr_data(ticket)).strip('"')[:16],
        }
        response = render(request, "tickets/page/ticket.html", context)
    response["Cache-Control"] = "private, no-cache"  # the state changes at the gate
    return _private(response)


def _qr_response(request, token: str, render_image, content_type: str) -> HttpResponse:
    ticket = _ticket(token)
    if ticket is None or ticket.status == Ticket.Status.REVOKED:
        return _private(HttpResponse("Not found.", status=404, content_type="text/plain"))
    data = ticket_qr_data(ticket)
    etag = qr_etag(data)
    response = get_conditional_response(request, etag=etag) or HttpResponse(
        render_image(data), content_type=content_type
    )
    response["ETag"] = etag
    patch_cache_control(response, private=True, max_age=QR_MAX_AGE)
    return _private(response)


@require_safe
def ticket_qr_svg(request, token: str) -> HttpResponse:
    return _qr_response(request, token, qr_svg, "image/svg+xml")


@require_safe
def ticket_qr_png(request, token: str) -> HttpResponse:
    return _qr_response(request, token, qr_png, "image/png")


def _file_response(request, token: str, render_file, content_type: str, suffix: str):
    """A file of a ticket that is not revoked, rendered when asked (a page visit never pays).
    `render_file(ticket, language)` gives the file's bytes, or a `TicketPdf` (its version is the
    ETag: a repeat with If-None-Match is a 304 and draws nothing)."""
    retry_after = _file_downloads_over_limit(token)
    if retry_after is not None:
        response = HttpResponse("Too many downloads.", status=429, content_type="text/plain")
        response["Retry-After"] = str(retry_after)
        return _private(response)
    language = _language(request)
    ticket = _ticket(token)
    if ticket is None or ticket.status == Ticket.Status.REVOKED:
        return _private(HttpResponse("Not found.", status=404, content_type="text/plain"))
    rendered = render_file(ticket, language)
    etag = getattr(rendered, "version", None) and f'"{rendered.version}"'
    response = etag and get_conditional_response(request, etag=etag)
    if not response:
        content = rendered.content() if etag else rendered
        response = HttpResponse(content, content_type=content_type)
        disposition = "inline" if suffix == "pdf" else "attachment"
        response["Content-Disposition"] = (
            f'{disposition}; filename="{ticket.reference_code}.{suffix}"'
        )
    if etag:
        response["ETag"] = etag
    response["Cache-Control"] = "private, no-cache"  # holder names and states change
    return _private(response)


def _file_downloads_over_limit(token: str) -> int | None:
    """Count a download of the link's files (`TICKET_FILE_RATE_LIMIT`): the seconds until its
    window ends when past the limit, else None."""
    if not getattr(settings, "RATELIMIT_ENABLE", True):
        return None
    counter = rate_counter("ticket-files", settings.TICKET_FILE_RATE_LIMIT, token)
    [count], _ = count_and_read_counters([counter], [])
    if count is None or count <= counter.limit:
        return None
    return max(counter.window_end - int(time.time()), 1)


@require_safe
def ticket_pdf(request, token: str) -> HttpResponse:
    return _file_response(
        request,
        token,
        lambda ticket, language: pdf_of_ticket(ticket, language=language),
        "application/pdf",
        "pdf",
    )


@require_safe
def ticket_calendar(request, token: str) -> HttpResponse:
    return _file_response(
        request, token, lambda ticket, language: ticket_ics(ticket), "text/calendar", "ics"
    )


@require_safe
def ticket_wallet_pass(request, token: str) -> HttpResponse:
    if not wallet_enabled():
        return _private(HttpResponse("Not found.", status=404, content_type="text/plain"))
    return _file_response(
        request,
        token,
        lambda ticket, language: ticket_pkpass(ticket),
        "application/vnd.apple.pkpass",
        "pkpass",
    )
