"""The ticket as a PDF (CONTRACT §14): `/t/<token>/ticket.pdf`, one page per ticket, read back
with poppler's tools (text, fonts, pixels) and the QR decoded from the rendered page."""

import email
import email.policy
import subprocess

import pytest
from django.core import mail

from tests.support import CHROMIUM, CHROMIUM_ARGS, live_site
from tickets.links import ticket_page_path
from tickets.models import Ticket
from tickets.notifications import ticket_email_send
from tickets.pdf import tickets_pdf

from .helpers import qr_signed_references, ticket_songkran

THAI_NAME = ("สมศักดิ์", "ใจดี")


@pytest.fixture
def thai_ticket(organizer):
    organizer.contact_email = "hello@bangkok-live.example"
    organizer.contact_phone = "+66 2 123 4567"
    organizer.save()
    return ticket_songkran(organizer, firstname=THAI_NAME[0], lastname=THAI_NAME[1])


def _poppler(*command: str, pdf: bytes) -> bytes:
    """A poppler tool reading the PDF from its standard input ("-")."""
    return subprocess.run(command, input=pdf, capture_output=True, check=True, timeout=60).stdout


def _text(pdf: bytes) -> str:
    """The page's text with whitespace removed: poppler puts a space before a Thai mark that
    sits above its consonant, where the PDF has none."""
    return "".join(_poppler("pdftotext", "-layout", "-", "-", pdf=pdf).decode().split())


def _png(pdf: bytes, resolution: int = 150) -> bytes:
    """The first page as PNG: poppler writes to standard output when given no file name."""
    return _poppler("pdftoppm", "-png", "-r", str(resolution), "-singlefile", "-", pdf=pdf)


def _pages(pdf: bytes) -> int:
    info = subprocess.run(
        ["pdfinfo", "-"], input=pdf, capture_output=True, check=True, timeout=60
    ).stdout.decode()
    return int(next(line.split()[1] for line in info.splitlines() if line.startswith("Pages:")))


@pytest.mark.django_db
def test_pdf_holds_the_whole_ticket_on_one_page(client, thai_ticket):
    response = client.get(f"{ticket_page_path(thai_ticket)}/ticket.pdf?lang=th")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/pdf"
    assert response["Content-Disposition"] == 'inline; filename="ABCD2345.pdf"'
    assert response["X-Robots-Tag"] == "noindex, nofollow, noarchive"
    pdf = response.content
    assert _pages(pdf) == 1
    text = _text(pdf)
    for expected in (
        "SongkranBeats",
        "ABCD2345",
        "".join(THAI_NAME),
        "Regular",
        "24ธันวาคม2569,19:00–23:30(Asia/Bangkok)",  # Buddhist era; a same-day date once
        "ImpactArena,MuangThongThani",
        "BangkokLive",
        "hello@bangkok-live.example",
        "+6621234567",
    ):
        assert expected in text
    # The shipped Thai font, embedded (subset), not whatever the machine has.
    fonts = subprocess.run(["pdffonts", "-"], input=pdf, capture_output=True, check=True)
    assert b"Ticket-Thai" in fonts.stdout
    assert qr_signed_references(_png(pdf)) == ["ABCD2345"]


@pytest.mark.django_db
def test_pdf_has_one_page_per_ticket(organizer):
    first = ticket_songkran(organizer)
    second = ticket_songkran(organizer, reference_code="WXYZ6789", firstname="Malee")
    tickets = Ticket.objects.select_related("event__organizer", "ticket_type").order_by("pk")

    pdf = tickets_pdf(list(tickets), language="en")

    assert _pages(pdf) == 2
    assert first.pk < second.pk
    pages = [
        _poppler("pdftoppm", "-png", "-r", "120", "-f", str(n), "-singlefile", "-", pdf=pdf)
        for n in (1, 2)
    ]
    assert [qr_signed_references(page) for page in pages] == [["ABCD2345"], ["WXYZ6789"]]


@pytest.mark.django_db
def test_pdf_without_a_holder_name_has_no_name_row(client, organizer):
    ticket = ticket_songkran(organizer, firstname="", lastname="")

    pdf = client.get(f"{ticket_page_path(ticket)}/ticket.pdf?lang=en").content

    assert "Name" not in _text(pdf)
    assert "Tickettype" in _text(pdf)


@pytest.mark.django_db
def test_revoked_or_unknown_tickets_have_no_pdf(client, organizer):
    ticket = ticket_songkran(organizer)
    Ticket.objects.filter(pk=ticket.pk).update(status=Ticket.Status.REVOKED)

    assert client.get(f"{ticket_page_path(ticket)}/ticket.pdf").status_code == 404
    assert client.get("/t/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA/ticket.pdf").status_code == 404
    assert client.get("/t/bad!/ticket.pdf").status_code == 404


@pytest.mark.django_db
def test_email_attaches_the_pdf_in_the_organizers_first_language(thai_ticket):
    ticket_email_send(ticket_id=thai_ticket.pk)

    message = email.message_from_bytes(
        mail.outbox[0].message().as_bytes(), policy=email.policy.default
    )
    part = list(message.iter_attachments())[-1]
    assert (part.get_filename(), part.get_content_type()) == ("ABCD2345.pdf", "application/pdf")
    pdf = part.get_content()
    assert "".join(THAI_NAME) in _text(pdf)
    assert "ประเภทบัตร" in _text(pdf)  # Thai labels: the organizer's emails are Thai first
    assert qr_signed_references(_png(pdf)) == ["ABCD2345"]


@pytest.fixture
def site(transactional_db):
    yield from live_site(range(8481, 8500))


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_pdf_from_the_ticket_page_shows_the_thai_name_and_a_scannable_qr(site, thai_ticket):
    """The holder's way: the page's PDF link, fetched by the browser, rendered to an image with
    pdftoppm and shown in Chromium, whose screenshot is what a phone's screen shows."""
    from pathlib import Path

    from playwright.sync_api import sync_playwright

    output = Path(__file__).resolve().parents[2] / "test-output"
    output.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 390, "height": 844})
            page.goto(f"{site}{ticket_page_path(thai_ticket)}?lang=th")
            link = page.locator("#pdf-link")
            label, href = link.inner_text(), link.get_attribute("href")
            response = page.request.get(f"{site}{href}")
            pdf = response.body()
            png = _png(pdf, resolution=110)
            (output / "ticket_pdf.png").write_bytes(png)
            viewer = browser.new_page(viewport={"width": 910, "height": 1290})
            viewer.goto((output / "ticket_pdf.png").as_uri())
            shot = viewer.screenshot(path=str(output / "ticket_pdf_chromium.png"))
        finally:
            browser.close()

    assert label == "บัตรแบบ PDF"
    assert response.headers["content-type"] == "application/pdf"
    assert "".join(THAI_NAME) in _text(pdf)
    assert qr_signed_references(shot) == ["ABCD2345"]
