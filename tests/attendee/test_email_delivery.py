"""The ticket email's sender and delivery: from `"<organizer> via <site>"`, replies to the
organizer, and what Django's mail backend answered shown on the admin's ticket page."""

import email
import email.policy
import socket

import pytest
from django.core import mail
from django.urls import reverse

from tests.smtp_server import SmtpServer
from tests.task_support import scheduled_tasks
from tickets.email_outbox import ticket_emails_queue
from tickets.email_status import TicketEmail
from tickets.notifications import ticket_email_send
from tickets.tasks import EMAIL_ATTEMPTS
from tickets.tasks import ticket_email_send as ticket_email_task

from .helpers import ticket_songkran

pytestmark = pytest.mark.django_db


@pytest.fixture
def contact(organizer):
    organizer.name = "บางกอก ไลฟ์"
    organizer.contact_email = "hello@bangkok-live.example"
    organizer.contact_phone = "+66 2 123 4567"
    organizer.save()
    return organizer


def _parsed(message) -> email.message.EmailMessage:
    return email.message_from_bytes(message.message().as_bytes(), policy=email.policy.default)


def test_email_comes_from_the_organizer_via_the_site_and_replies_go_to_them(contact, settings):
    settings.SITE_NAME = "Ticketing"
    settings.DEFAULT_FROM_EMAIL = "Tickets <tickets@ticketing.example>"

    ticket_email_send(ticket_id=ticket_songkran(contact).pk)

    message = _parsed(mail.outbox[0])
    sender = message["From"].addresses[0]
    assert (sender.display_name, sender.addr_spec) == (
        "บางกอก ไลฟ์ via Ticketing",
        "tickets@ticketing.example",
    )
    assert [a.addr_spec for a in message["Reply-To"].addresses] == ["hello@bangkok-live.example"]
    text = message.get_body(("plain",)).get_content()
    html = message.get_body(("html",)).get_content()
    assert "Organizer: บางกอก ไลฟ์, hello@bangkok-live.example, +66 2 123 4567" in text
    assert "ผู้จัดงาน: บางกอก ไลฟ์, hello@bangkok-live.example, +66 2 123 4567" in text
    assert '<a href="mailto:hello@bangkok-live.example">hello@bangkok-live.example</a>' in html
    assert "Reply to this email to reach the organizer." in text


def test_without_a_contact_address_there_is_no_reply_to(organizer):
    ticket_email_send(ticket_id=ticket_songkran(organizer).pk)

    message = _parsed(mail.outbox[0])
    assert message["Reply-To"] is None
    assert "Reply to this email" not in message.get_body(("plain",)).get_content()


def test_a_sent_email_is_recorded_and_shown_to_staff(admin_client, contact, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    ticket = ticket_songkran(contact)
    with SmtpServer(answering=True) as server:
        settings.EMAIL_PORT = server.port
        ticket_email_task.call(ticket.pk)

    assert len(server.messages) == 1
    record = TicketEmail.objects.get(ticket=ticket)
    assert (record.status, record.attempts, record.recipient, record.error) == (
        TicketEmail.Status.SENT,
        1,
        "somsak@example.com",
        "",
    )
    html = admin_client.get(reverse("admin:tickets_ticket_change", args=[ticket.pk])).content
    assert b"<strong>Sent</strong> to somsak@example.com on " in html
    assert b"(attempt 1)" in html


def _closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on: connecting is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_refused_email_is_recorded_as_retrying_then_failed(admin_client, organizer, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", _closed_port()
    ticket = ticket_songkran(organizer)
    change_page = reverse("admin:tickets_ticket_change", args=[ticket.pk])

    ticket_email_task.call(ticket.pk)  # refused: recorded, and tried again later

    record = TicketEmail.objects.get(ticket=ticket)
    assert (record.status, record.attempts) == (TicketEmail.Status.RETRYING, 1)
    assert "ConnectionRefusedError" in record.error
    assert [t.args_kwargs["args"] for t in scheduled_tasks(name_contains="ticket_email")] == [
        [ticket.pk, 2]
    ]
    html = admin_client.get(change_page).content.decode()
    assert "<strong>Failed, will be retried</strong>: to somsak@example.com on " in html
    assert "(attempt 1): ConnectionRefusedError(" in html

    with pytest.raises(ConnectionRefusedError):
        ticket_email_task.call(ticket.pk, EMAIL_ATTEMPTS)  # the last attempt

    record.refresh_from_db()
    assert (record.status, record.attempts) == (TicketEmail.Status.FAILED, EMAIL_ATTEMPTS)
    html = admin_client.get(change_page).content.decode()
    assert "<strong>Failed</strong>: to somsak@example.com on " in html


def test_a_ticket_never_emailed_says_so(admin_client, organizer):
    with_email, without = (
        ticket_songkran(organizer),
        ticket_songkran(organizer, reference_code="WXYZ6789", email=""),
    )

    for ticket, expected in ((with_email, "Not sent yet"), (without, "No email address")):
        html = admin_client.get(reverse("admin:tickets_ticket_change", args=[ticket.pk]))
        assert expected in html.content.decode()


def test_organizer_contact_is_edited_in_the_admin(admin_client, organizer):
    change = reverse("admin:organizers_organizer_change", args=[organizer.pk])
    assert 'name="contact_email"' in admin_client.get(change).content.decode()

    response = admin_client.post(
        change,
        {
            "name": "Bangkok Live",
            "slug": organizer.slug,
            "description": "",
            "email_language": organizer.email_language,
            "contact_email": "hello@bangkok-live.example",
            "contact_phone": "+66 2 123 4567",
            "memberships-TOTAL_FORMS": "0",
            "memberships-INITIAL_FORMS": "0",
        },
    )

    assert response.status_code == 302
    organizer.refresh_from_db()
    assert (organizer.contact_email, organizer.contact_phone) == (
        "hello@bangkok-live.example",
        "+66 2 123 4567",
    )


def test_a_queued_email_says_so(admin_client, organizer):
    ticket = ticket_songkran(organizer)
    ticket_emails_queue([ticket])
    html = admin_client.get(reverse("admin:tickets_ticket_change", args=[ticket.pk]))
    assert "<strong>Queued</strong> for somsak@example.com on " in html.content.decode()
