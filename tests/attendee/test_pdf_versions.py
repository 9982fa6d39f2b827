"""A ticket's PDF is drawn once per version of what it shows (issue 40): repeats are served
from the cache, answered 304 to If-None-Match, and a link's file downloads are rate-limited."""

import pytest

from checkin.services.gate import ticket_check_in
from tickets import pdf
from tickets.links import ticket_page_path
from tickets.services.common import Actor

from .helpers import ticket_songkran

pytestmark = pytest.mark.django_db


@pytest.fixture
def drawings(monkeypatch) -> list[str]:
    """The HTML of every PDF actually drawn."""
    drawn: list[str] = []
    draw = pdf._pdf_write

    def counting(html: str) -> bytes:
        drawn.append(html)
        return draw(html)

    monkeypatch.setattr(pdf, "_pdf_write", counting)
    return drawn


def _get(client, ticket, **headers):
    return client.get(f"{ticket_page_path(ticket)}/ticket.pdf?lang=en", **headers)


def test_a_repeat_is_served_from_the_copy_of_its_version(client, organizer, drawings):
    ticket = ticket_songkran(organizer)
    first, again = _get(client, ticket), _get(client, ticket)

    assert first.status_code == again.status_code == 200
    assert len(drawings) == 1
    assert again.content == first.content and first.content.startswith(b"%PDF-")
    assert first["ETag"] == again["ETag"]
    assert first["ETag"].startswith('"') and len(first["ETag"]) == 66  # a SHA-256, quoted
    assert first["Cache-Control"] == "private, no-cache"


def test_if_none_match_is_answered_304_without_drawing(client, organizer, drawings):
    ticket = ticket_songkran(organizer)
    etag = _get(client, ticket)["ETag"]

    repeat = _get(client, ticket, HTTP_IF_NONE_MATCH=etag)

    assert repeat.status_code == 304
    assert repeat.content == b""
    assert repeat["ETag"] == etag
    assert len(drawings) == 1


def test_a_new_version_only_when_what_the_pdf_shows_changes(client, organizer, drawings):
    ticket = ticket_songkran(organizer)
    first = _get(client, ticket)["ETag"]

    ticket_check_in(event=ticket.event, ticket_id=ticket.id, actor=Actor())  # not printed
    assert _get(client, ticket)["ETag"] == first
    assert len(drawings) == 1

    ticket.refresh_from_db()
    ticket.firstname = "Malee"
    ticket.save()
    renamed = _get(client, ticket)
    assert renamed["ETag"] != first
    assert len(drawings) == 2 and "Malee" in drawings[1]
    assert _get(client, ticket, HTTP_IF_NONE_MATCH=first).status_code == 200  # an old copy
    thai = client.get(f"{ticket_page_path(ticket)}/ticket.pdf?lang=th")
    assert thai["ETag"] not in (first, renamed["ETag"])  # each language its own version


def test_a_links_downloads_are_limited_per_link(client, organizer, settings, drawings):
    settings.TICKET_FILE_RATE_LIMIT = "3/m"
    ticket = ticket_songkran(organizer)
    other = ticket_songkran(organizer, reference_code="WXYZ6789")
    base = ticket_page_path(ticket)

    statuses = [
        client.get(f"{base}/{name}").status_code
        for name in ("ticket.pdf", "ticket.ics", "ticket.pdf", "ticket.pdf")
    ]

    assert statuses == [200, 200, 200, 429]
    refused = client.get(f"{base}/ticket.pdf")
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert refused["Content-Type"] == "text/plain"
    assert _get(client, other).status_code == 200  # another link counts apart
    assert len(drawings) == 2
