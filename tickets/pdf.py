"""The ticket as a PDF (CONTRACT §14): one A4 page per ticket, for printing or keeping offline.

WeasyPrint lays out an HTML template through Pango and HarfBuzz, so Thai is shaped as a browser
shapes it (tone marks and vowels stacked on their consonants), which PDF libraries that place
glyphs one by one do not do. The font travels with the code (`fonts/`: TLWG's Loma, GPL with the
font exception, so embedding it leaves the document's license alone): the PDF looks the same on
every machine, whatever fonts it has. The QR code is an SVG, drawn as vectors: sharp at any zoom
and on any printer. Nothing is fetched but the font files and the inline image.

Drawing a ticket takes about 64 ms of a core, so a ticket's PDF is drawn once per version and
kept in the cache, shared by every server (`ticket_pdf`): its version is a digest of the HTML it
is drawn from, which holds everything the PDF shows, and of WeasyPrint's release.
"""

import base64
import functools
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from django.core.cache import cache
from django.template.loader import render_to_string
from django.utils import timezone, translation

from .event_times import event_when
from .models import Ticket
from .qr import qr_svg
from .signed_codes import ticket_qr_data

FONTS = Path(__file__).parent / "fonts"
_ALLOWED_FILES = tuple(path.as_uri() for path in (FONTS / "Loma.ttf", FONTS / "Loma-Bold.ttf"))


@functools.cache
def _own_files_only() -> type:
    """A WeasyPrint URL fetcher of the template's own font files and `data:` images; any other
    URL is refused. WeasyPrint takes most of a second to import: only a process that draws a
    PDF pays for it, not every `manage.py` command or worker start."""
    from weasyprint import URLFetcher

    class OwnFilesOnly(URLFetcher):
        def fetch(self, url, headers=None):
            if url in _ALLOWED_FILES or url.startswith("data:"):
                return super().fetch(url, headers)
            raise ValueError(f"not fetched: {url}")

    return OwnFilesOnly


def _entry(ticket: Ticket) -> dict:
    event = ticket.event
    svg = base64.b64encode(qr_svg(ticket_qr_data(ticket))).decode()
    return {
        "ticket": ticket,
        "event": event,
        "organizer": event.organizer,
        "when": event_when(event.start_at, event.end_at),
        "qr": f"data:image/svg+xml;base64,{svg}",
    }


# A version's PDF never changes: kept until the cache needs the room, a week at most.
PDF_CACHE_SECONDS = 60 * 60 * 24 * 7


@dataclass(frozen=True)
class TicketPdf:
    """A ticket's PDF as it would be drawn now: its version (an ETag's value) and the drawing."""

    html: str
    version: str

    def content(self) -> bytes:
        """The PDF: from the cache when this version was drawn before, by any server."""
        key = f"ticket-pdf:{self.version}"
        pdf = cache.get(key)
        if pdf is None:
            pdf = _pdf_write(self.html)
            cache.set(key, pdf, PDF_CACHE_SECONDS)
        return pdf


def ticket_pdf(ticket: Ticket, *, language: str) -> TicketPdf:
    """The ticket's PDF in `language` (its HTML is rendered now, a millisecond or so; it is
    drawn only when `content()` finds no copy of this version)."""
    html = _tickets_html([ticket], language=language)
    digest = hashlib.sha256(f"weasyprint {_weasyprint_version()}\n{html}".encode()).hexdigest()
    return TicketPdf(html=html, version=digest)


@functools.cache
def _weasyprint_version() -> str:
    return version("weasyprint")


def tickets_pdf(tickets: Iterable[Ticket], *, language: str) -> bytes:
    """A PDF of the tickets, one page each, labelled in `language`.

    Needs each ticket's `event__organizer` and `ticket_type` loaded.
    """
    return _pdf_write(_tickets_html(tickets, language=language))


def _tickets_html(tickets: Iterable[Ticket], *, language: str) -> str:
    with translation.override(language):
        html = render_to_string(
            "tickets/pdf/tickets.html",
            {
                "tickets": [_entry(ticket) for ticket in tickets],
                "language": language,
                "time_zone": timezone.get_current_timezone_name(),
                "font_regular": _ALLOWED_FILES[0],
                "font_bold": _ALLOWED_FILES[1],
            },
        )
    return html


def _pdf_write(html: str) -> bytes:
    from weasyprint import HTML

    return HTML(string=html, url_fetcher=_own_files_only()()).write_pdf()
