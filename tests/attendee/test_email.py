"""The ticket email (CONTRACT §14): QR inline by `cid:`, the page's link, a calendar file, and
the organizer's languages."""

import email
import email.policy
from datetime import UTC, datetime

import pytest
from django.conf import settings
from django.core import mail
from icalendar import Calendar

from organizers.models import Organizer
from tickets.notifications import ticket_email_send

from .helpers import qr_signed_references, ticket_songkran

pytestmark = pytest.mark.django_db


def _sent(ticket) -> email.message.EmailMessage:
    """The one message sent for the ticket, parsed back from its bytes as a mail client would."""
    ticket_email_send(ticket_id=ticket.pk)
    assert len(mail.outbox) == 1
    raw = mail.outbox[0].message().as_bytes()
    return email.message_from_bytes(raw, policy=email.policy.default)


def _structure(part, depth=0) -> list[str]:
    lines = ["  " * depth + part.get_content_type()]
    if part.is_multipart():
        for child in part.iter_parts():
            lines += _structure(child, depth + 1)
    return lines


def test_email_parts_nest_as_mail_clients_expect(organizer):
    message = _sent(ticket_songkran(organizer))

    assert _structure(message) == [
        "multipart/mixed",
        "  multipart/related",
        "    multipart/alternative",
        "      text/plain",
        "      text/html",
        "    image/png",
        "  text/calendar",
        "  application/pdf",
    ]


def test_email_shows_the_qr_code_inline_by_content_id(organizer):
    ticket = ticket_songkran(organizer)
    message = _sent(ticket)

    image = next(p for p in message.walk() if p.get_content_type() == "image/png")
    content_id = image["Content-ID"].strip("<>")
    assert content_id == f"qr-{ticket.pk}@127.0.0.1"
    assert image.get_content_disposition() == "inline"
    html = message.get_body(("html",)).get_content()
    assert f'<img src="cid:{content_id}" width="240" height="240"' in html
    assert "data:" not in html
    assert qr_signed_references(image.get_content()) == ["ABCD2345"]


def test_email_html_and_text_carry_code_link_time_and_place(organizer):
    ticket = ticket_songkran(organizer)
    organizer.email_language = Organizer.EmailLanguage.ENGLISH
    organizer.save()
    message = _sent(ticket)
    url = f"{settings.SITE_URL}/t/{ticket.page_token}"

    text = message.get_body(("plain",)).get_content()
    html = message.get_body(("html",)).get_content()
    assert message["Subject"].strip() == "Your ticket ABCD2345 for Songkran Beats"
    assert "Reference code: ABCD2345" in text
    assert f"{url}\n" in text
    assert (
        "When: Thursday 24 December 2026, 19:00 – 23:30 (Asia/Bangkok)"  # the date once
    ) in text
    assert "Where: Impact Arena, Muang Thong Thani" in text
    assert "Hello Somsak Jaidee," in text
    assert f'<a href="{url}">Open your ticket page</a>' in html
    assert 'monospace; font-size: 1.4em;">ABCD2345</td>' in html
    assert "<td>Thursday 24 December 2026, 19:00 – 23:30 (Asia/Bangkok)</td>" in html
    assert "<td>Impact Arena, Muang Thong Thani</td>" in html
    assert "สวัสดี" not in text + html


def test_email_is_thai_with_english_below_by_default(organizer):
    assert organizer.email_language == Organizer.EmailLanguage.THAI_ENGLISH
    message = _sent(ticket_songkran(organizer))

    assert message["Subject"].strip() == (
        "บัตรของคุณ ABCD2345 สำหรับงาน Songkran Beats / Your ticket ABCD2345 for Songkran Beats"
    )
    for body in (
        message.get_body(("plain",)).get_content(),
        message.get_body(("html",)).get_content(),
    ):
        thai, english = body.index("สวัสดีคุณ Somsak Jaidee"), body.index("Hello Somsak Jaidee,")
        assert thai < english
        assert "พฤหัสบดี 24 ธันวาคม 2569, 19:00" in body  # Thai: the Buddhist era
        assert "Thursday 24 December 2026, 19:00" in body


def test_email_in_thai_only(organizer):
    organizer.email_language = Organizer.EmailLanguage.THAI
    organizer.save()
    message = _sent(ticket_songkran(organizer))

    text = message.get_body(("plain",)).get_content()
    assert message["Subject"].strip() == "บัตรของคุณ ABCD2345 สำหรับงาน Songkran Beats"
    assert "รหัสอ้างอิง: ABCD2345" in text
    assert "Hello" not in text


def test_email_attaches_the_event_as_icalendar_in_utc(organizer):
    ticket = ticket_songkran(organizer)
    message = _sent(ticket)

    part = next(p for p in message.walk() if p.get_content_type() == "text/calendar")
    assert part.get_content_disposition() == "attachment"
    assert part.get_filename() == "ABCD2345.ics"
    assert part.get_param("method") == "PUBLISH"
    raw = part.get_content().encode()
    assert b"DTSTART:20261224T120000Z" in raw
    assert b"DTEND:20261224T163000Z" in raw
    calendar = Calendar.from_ical(raw)
    [entry] = calendar.walk("VEVENT")
    assert entry.decoded("dtstart") == datetime(2026, 12, 24, 12, 0, tzinfo=UTC)
    assert entry.decoded("dtend") == datetime(2026, 12, 24, 16, 30, tzinfo=UTC)
    assert str(entry["uid"]) == f"ticket-{ticket.pk}@127.0.0.1"
    assert str(entry["summary"]) == "Songkran Beats"
    assert str(entry["location"]) == "Impact Arena, Muang Thong Thani"
    assert str(entry["url"]) == f"{settings.SITE_URL}/t/{ticket.page_token}"


def test_calendar_uid_is_stable_across_resends(organizer):
    ticket = ticket_songkran(organizer)
    uids = []
    for _ in range(2):
        mail.outbox.clear()
        message = _sent(ticket)
        part = next(p for p in message.walk() if p.get_content_type() == "text/calendar")
        uids.append(str(Calendar.from_ical(part.get_content()).walk("VEVENT")[0]["uid"]))
    assert uids[0] == uids[1] == f"ticket-{ticket.pk}@127.0.0.1"


def test_email_escapes_holder_and_event_in_html(organizer):
    ticket = ticket_songkran(organizer, firstname="<b>Somsak</b>", lastname="&")
    ticket.event.title = "<script>x</script>"
    ticket.event.save()
    message = _sent(ticket)

    html = message.get_body(("html",)).get_content()
    assert "<script>" not in html and "<b>Somsak" not in html
    assert "&lt;b&gt;Somsak&lt;/b&gt; &amp;" in html
    assert "<strong>&lt;script&gt;x&lt;/script&gt;</strong>" in html
    text = message.get_body(("plain",)).get_content()
    assert "Hello <b>Somsak</b> &," in text  # plain text is not HTML: shown as typed


def test_email_subject_is_plain_text(organizer):
    ticket = ticket_songkran(organizer)
    ticket.event.title = "Rock & Roll <Live>"
    ticket.event.save()

    subject = _sent(ticket)["Subject"]

    assert "Rock & Roll <Live>" in subject and "&amp;" not in subject
