"""What the ticket page offers beside the QR: the organizer and how to reach them, the PDF,
the calendar entry the email attaches, and no empty rows."""

import email
import email.policy

import pytest
from django.core import mail
from django.db import connection
from django.test.utils import CaptureQueriesContext
from icalendar import Calendar

from tickets.links import ticket_page_path
from tickets.models import Ticket
from tickets.notifications import ticket_email_send

from .helpers import ticket_songkran

pytestmark = pytest.mark.django_db


def _event(ics: bytes) -> dict:
    """The calendar's event, without the stamp of when the file was made."""
    (entry,) = Calendar.from_ical(ics).walk("VEVENT")
    return {key: str(value.to_ical()) for key, value in entry.items() if key != "DTSTAMP"}


def test_add_to_calendar_serves_the_emails_calendar_file(client, organizer):
    ticket = ticket_songkran(organizer)
    html = client.get(ticket_page_path(ticket), HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert (
        f'<a id="calendar-link" href="/t/{ticket.page_token}/ticket.ics">Add to calendar</a>'
        in (html)
    )

    response = client.get(f"/t/{ticket.page_token}/ticket.ics")
    ticket_email_send(ticket_id=ticket.pk)
    message = email.message_from_bytes(
        mail.outbox[0].message().as_bytes(), policy=email.policy.default
    )
    attached = next(p for p in message.walk() if p.get_content_type() == "text/calendar")

    assert response.status_code == 200
    assert response["Content-Type"] == "text/calendar"
    assert response["Content-Disposition"] == 'attachment; filename="ABCD2345.ics"'
    assert _event(response.content) == _event(attached.get_content().encode())
    assert _event(response.content)["SUMMARY"] == "b'Songkran Beats'"


def test_page_names_the_organizer_and_how_to_reach_them(client, organizer):
    organizer.contact_email = "hello@bangkok-live.example"
    organizer.contact_phone = "+66 2 123 4567"
    organizer.save()
    ticket = ticket_songkran(organizer)

    html = client.get(ticket_page_path(ticket), HTTP_ACCEPT_LANGUAGE="en").content.decode()

    assert (
        '<dd id="organizer">Bangkok Live'
        '<br><a href="mailto:hello@bangkok-live.example">hello@bangkok-live.example</a>'
        '<br><a href="tel:+6621234567">+66 2 123 4567</a></dd>'
    ) in html
    assert f'<a id="pdf-link" href="/t/{ticket.page_token}/ticket.pdf?lang=en">' in html


def test_page_without_a_holder_name_has_no_name_row(client, organizer):
    ticket = ticket_songkran(organizer, firstname="", lastname="")

    html = client.get(ticket_page_path(ticket), HTTP_ACCEPT_LANGUAGE="en").content.decode()

    assert "holder-name" not in html
    assert "<dt>Name</dt>" not in html
    assert "—" not in html
    assert '<dd id="ticket-type">Regular</dd>' in html


def test_an_event_over_several_days_prints_both_dates(client, organizer):
    ticket = ticket_songkran(organizer)
    ticket.event.end_at = ticket.event.start_at.replace(day=26)
    ticket.event.save()

    html = client.get(ticket_page_path(ticket), HTTP_ACCEPT_LANGUAGE="en").content.decode()

    assert ">Dec. 24, 2026, 7 p.m.</time> – <time" in html
    assert ">Dec. 26, 2026, 7 p.m.</time></dd>" in html


def test_files_cost_one_query_and_a_revoked_ticket_has_none(client, organizer):
    ticket = ticket_songkran(organizer)
    for suffix in ("ticket.pdf", "ticket.ics"):
        with CaptureQueriesContext(connection) as queries:
            assert client.get(f"/t/{ticket.page_token}/{suffix}").status_code == 200
        assert len(queries) == 1  # the ticket by its token, with event, organizer and type

    Ticket.objects.filter(pk=ticket.pk).update(status=Ticket.Status.REVOKED)
    html = client.get(ticket_page_path(ticket)).content.decode()
    assert "pdf-link" not in html and "calendar-link" not in html
    for suffix in ("ticket.pdf", "ticket.ics"):
        assert client.get(f"/t/{ticket.page_token}/{suffix}").status_code == 404
