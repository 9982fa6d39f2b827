"""The ticket page `/t/<token>` and its QR images (CONTRACT §14), through the test client."""

import base64
import hashlib
import io
import re

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from PIL import Image

from events.models import Event
from tickets.links import ticket_page_path, ticket_page_url
from tickets.models import Ticket
from tickets.page_views import CONTENT_SECURITY_POLICY
from tickets.qr import qr_etag
from tickets.services.pages import ticket_page_token_regenerate
from tickets.signed_codes import ticket_qr_data

from .helpers import qr_read, qr_signed_references, signed_reference, ticket_songkran

pytestmark = pytest.mark.django_db


@pytest.fixture
def ticket(organizer):
    return ticket_songkran(organizer)


def _html(response) -> str:
    return response.content.decode()


def test_page_shows_the_ticket(client, ticket):
    with CaptureQueriesContext(connection) as queries:
        response = client.get(ticket_page_path(ticket), HTTP_ACCEPT_LANGUAGE="en")

    assert len(queries) == 1  # the ticket by its token, with its event and type
    assert response.status_code == 200
    assert response["Content-Type"] == "text/html; charset=utf-8"
    assert response["Content-Language"] == "en"
    html = _html(response)
    assert '<html lang="en">' in html
    assert '<p class="code" id="reference-code">ABCD2345</p>' in html
    assert '<dd id="holder-name">Somsak Jaidee</dd>' in html
    assert '<dd id="ticket-type">Regular</dd>' in html
    assert "<h1>Songkran Beats</h1>" in html
    assert '<dd id="place">Impact Arena, Muang Thong Thani</dd>' in html
    # The event's local time (Asia/Bangkok, UTC+7), with its offset in the machine-readable form.
    # A same-day event's date is printed once.
    assert (
        '<dd id="when"><time datetime="2026-12-24T19:00:00+07:00">Dec. 24, 2026, 7 p.m.</time>'
        ' – <time datetime="2026-12-24T23:30:00+07:00">11:30 p.m.</time></dd>'
    ) in html
    assert '<dd id="organizer">Bangkok Live</dd>' in html
    assert "<dd>Asia/Bangkok</dd>" in html
    assert 'id="state">Valid: show this code at the entrance.</p>' in html
    assert f'<img class="qr" id="qr" src="/t/{ticket.page_token}/qr.svg?v=' in html


def test_page_headers_keep_it_private_and_self_contained(client, ticket):
    response = client.get(ticket_page_path(ticket))

    assert response["X-Robots-Tag"] == "noindex, nofollow, noarchive"
    assert response["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert CONTENT_SECURITY_POLICY.startswith("default-src 'none'; img-src 'self'; style-src 'sha")
    assert "script-src" not in CONTENT_SECURITY_POLICY  # default-src 'none': no script runs
    assert response["Referrer-Policy"] == "no-referrer"
    assert response["Cache-Control"] == "private, no-cache"
    html = _html(response)
    assert '<meta name="robots" content="noindex, nofollow, noarchive">' in html
    assert "<script" not in html
    # Nothing from another site: every src and href is this site's own.
    assert re.findall(r'(?:src|href)="([^"]*)"', html) == [
        "?lang=en",
        "?lang=th",
        f"/t/{ticket.page_token}/qr.svg?v={qr_etag(ticket_qr_data(ticket))[1:17]}",
        f"/t/{ticket.page_token}/ticket.pdf?lang=en",
        f"/t/{ticket.page_token}/ticket.ics",
    ]


def test_page_stylesheet_is_the_one_the_policy_allows(client, ticket):
    html = _html(client.get(ticket_page_path(ticket)))
    css = re.search(r"<style>(.*?)</style>", html, re.S).group(1)
    digest = base64.b64encode(hashlib.sha256(css.encode()).digest()).decode()
    assert f"style-src 'sha256-{digest}'" in CONTENT_SECURITY_POLICY
    assert "@media print" in css


def test_page_follows_accept_language(client, ticket):
    response = client.get(ticket_page_path(ticket), HTTP_ACCEPT_LANGUAGE="th-TH,th;q=0.9,en;q=0.8")

    assert response["Content-Language"] == "th"
    assert "Accept-Language" in response["Vary"]
    html = _html(response)
    assert '<html lang="th">' in html
    assert 'id="state">ใช้ได้: แสดงรหัสนี้ที่ทางเข้า</p>' in html
    assert "<dt>ประเภทบัตร</dt>" in html
    assert "24 ธันวาคม 2569" in html  # Thai month names, the Buddhist era (2026 + 543)
    assert '<a href="?lang=th" hreflang="th" lang="th" aria-current="true">ไทย</a>' in html


def test_page_language_switch_overrides_the_browser(client, ticket):
    path = ticket_page_path(ticket)
    english = client.get(f"{path}?lang=en", HTTP_ACCEPT_LANGUAGE="th")
    thai = client.get(f"{path}?lang=th", HTTP_ACCEPT_LANGUAGE="en")
    unknown = client.get(f"{path}?lang=xx", HTTP_ACCEPT_LANGUAGE="en")

    assert english["Content-Language"] == "en"
    assert "Valid: show this code at the entrance." in _html(english)
    assert thai["Content-Language"] == "th"
    assert "ใช้ได้: แสดงรหัสนี้ที่ทางเข้า" in _html(thai)
    assert unknown.status_code == 200 and unknown["Content-Language"] == "en"


def test_used_ticket_says_when(client, ticket):
    used_at = timezone.datetime.fromisoformat("2026-12-24T12:41:00+00:00")
    Ticket.objects.filter(pk=ticket.pk).update(status=Ticket.Status.USED, used_at=used_at)

    html = _html(client.get(ticket_page_path(ticket), HTTP_ACCEPT_LANGUAGE="en"))

    assert 'id="state">Used: checked in on Dec. 24, 2026, 7:41 p.m.</p>' in html
    assert 'id="qr"' in html  # a used ticket is still this ticket: renewing it at the gate needs it


def test_revoked_ticket_is_not_valid_and_has_no_qr(client, ticket):
    Ticket.objects.filter(pk=ticket.pk).update(status=Ticket.Status.REVOKED)
    path = ticket_page_path(ticket)

    response = client.get(path, HTTP_ACCEPT_LANGUAGE="en")

    assert response.status_code == 200
    html = _html(response)
    assert 'id="state">This ticket has been revoked. It is not valid for entry.</p>' in html
    assert "<img" not in html
    assert "qr.svg" not in html
    for image in ("qr.svg", "qr.png"):
        refused = client.get(f"{path}/{image}")
        assert refused.status_code == 404
        assert refused["X-Robots-Tag"] == "noindex, nofollow, noarchive"


def test_unknown_token_is_a_404_page(client, ticket):
    response = client.get("/t/" + "A" * 32, HTTP_ACCEPT_LANGUAGE="en")

    assert response.status_code == 404
    assert response["X-Robots-Tag"] == "noindex, nofollow, noarchive"
    assert response["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    html = _html(response)
    assert "<h1>Ticket not found</h1>" in html
    assert "ABCD2345" not in html


def test_regenerated_token_retires_the_old_address(client, ticket):
    old_path, old_url = ticket_page_path(ticket), ticket_page_url(ticket)
    updated_before = ticket.updated_at

    ticket_page_token_regenerate(ticket=ticket)

    ticket.refresh_from_db()
    assert ticket_page_url(ticket) != old_url
    assert ticket.updated_at > updated_before  # feeds by updated_at carry the new ticket_url
    for suffix in ("", "/qr.svg", "/qr.png"):
        assert client.get(old_path + suffix).status_code == 404
        assert client.get(ticket_page_path(ticket) + suffix).status_code == 200
    assert ticket_page_url(ticket) == f"{settings.SITE_URL}/t/{ticket.page_token}"
    assert re.fullmatch(r"[A-Za-z0-9_-]{32}", ticket.page_token)


@pytest.mark.parametrize(
    "path",
    [
        "/t/%00",
        "/t/abc%00def" + "x" * 30,
        "/t/..",
        "/t/%3Cscript%3Ealert(1)%3C%2Fscript%3E",
        "/t/" + "A" * 5000,
        "/t/%E0%B8%95%E0%B8%B1%E0%B9%8B%E0%B8%A7" * 4,  # Thai letters
        "/t/a'b%22c;DROP%20TABLE%20tickets_ticket" + "x" * 20,
        "/t/%ff%fe",
        "/t/x/qr.png",
        "/t/%00/qr.svg",
        "/t/" + "A" * 32 + "/qr.gif",
    ],
)
def test_odd_tokens_are_404_not_500(client, ticket, path):
    response = client.get(path)
    assert response.status_code == 404


def test_page_escapes_what_holders_and_organizers_typed(client, organizer):
    ticket = ticket_songkran(
        organizer, firstname='<script>alert("x")</script>', lastname="<b>&amp;</b>"
    )
    ticket.event.title = "<img src=x onerror=alert(1)>"
    ticket.event.save()

    html = _html(client.get(ticket_page_path(ticket)))

    assert "<script>alert" not in html
    assert "<img src=x" not in html
    assert (
        '<dd id="holder-name">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; '
        "&lt;b&gt;&amp;amp;&lt;/b&gt;</dd>"
    ) in html
    assert "<h1>&lt;img src=x onerror=alert(1)&gt;</h1>" in html


def test_qr_png_encodes_the_reference_code(client, ticket):
    with CaptureQueriesContext(connection) as queries:
        response = client.get(f"{ticket_page_path(ticket)}/qr.png")

    assert len(queries) == 1
    assert response.status_code == 200
    assert response["Content-Type"] == "image/png"
    results = qr_read(response.content)
    assert [signed_reference(r.text) for r in results] == ["ABCD2345"]
    assert results[0].ec_level in ("M", "Q", "H")  # M or better
    # The quiet zone: 4 white modules (10 px each) all round the symbol.
    image = Image.open(io.BytesIO(response.content)).convert("L")
    width, height = image.size
    assert width == height >= 290
    border = [
        image.getpixel((x, y))
        for x in range(width)
        for y in range(height)
        if min(x, y, width - 1 - x, height - 1 - y) < 40
    ]
    assert set(border) == {255}


def test_qr_svg_is_a_scalable_image_of_the_code(client, ticket):
    Event.objects.filter(pk=ticket.event_id).update(signed_codes=False)  # the code alone
    response = client.get(f"{ticket_page_path(ticket)}/qr.svg")

    assert response.status_code == 200
    assert response["Content-Type"] == "image/svg+xml"
    svg = response.content.decode()
    assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 29 29"')
    assert "<script" not in svg


def test_qr_decodes_for_long_imported_codes(client, organizer):
    ticket = ticket_songkran(organizer, reference_code="PARTNER-2026-0000000000000001")
    response = client.get(f"{ticket_page_path(ticket)}/qr.png")
    assert qr_signed_references(response.content) == ["PARTNER-2026-0000000000000001"]


@pytest.mark.parametrize("image", ["qr.png", "qr.svg"])
def test_qr_images_are_cacheable(client, ticket, image):
    path = f"{ticket_page_path(ticket)}/{image}"
    first = client.get(path)

    etag = first["ETag"]
    assert re.fullmatch(r'"[0-9a-f]{32}"', etag)
    assert first["Cache-Control"] == "private, max-age=86400"
    again = client.get(path, HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304
    assert again.content == b""
    assert again["ETag"] == etag
    # A code changed in the admin is another image, under another tag.
    Ticket.objects.filter(pk=ticket.pk).update(reference_code="WXYZ6789")
    changed = client.get(path, HTTP_IF_NONE_MATCH=etag)
    assert changed.status_code == 200
    assert changed["ETag"] != etag


def test_page_refuses_writes(client, ticket):
    assert client.post(ticket_page_path(ticket)).status_code == 405
