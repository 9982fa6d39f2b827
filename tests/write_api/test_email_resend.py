"""Resending a ticket email: the rule lives in the service, whichever interface calls it."""

import pytest
from django.core import mail

from tests.factories import TicketFactory
from ticketing.api.exceptions import InvalidParameters
from tickets.exceptions import TicketRevoked
from tickets.services.issuing import ticket_email_resend

pytestmark = pytest.mark.django_db


def test_ticket_email_resend_sends_once_after_commit(django_capture_on_commit_callbacks):
    ticket = TicketFactory(email="holder@example.com", reference_code="RESEND01")

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        ticket_email_resend(ticket=ticket)
        assert mail.outbox == []  # nothing leaves before commit

    assert len(callbacks) == 1
    assert [m.to for m in mail.outbox] == [["holder@example.com"]]
    assert "RESEND01" in mail.outbox[0].body


def test_ticket_email_resend_refuses_a_revoked_ticket(django_capture_on_commit_callbacks):
    ticket = TicketFactory(status="revoked", reference_code="RESEND02")

    with (
        django_capture_on_commit_callbacks(execute=True) as callbacks,
        pytest.raises(TicketRevoked) as raised,
    ):
        ticket_email_resend(ticket=ticket)

    assert raised.value.code == "ticket_revoked"
    assert raised.value.extra["ticket"]["reference_code"] == "RESEND02"
    assert callbacks == [] and mail.outbox == []


def test_ticket_email_resend_refuses_a_ticket_without_email(django_capture_on_commit_callbacks):
    ticket = TicketFactory(email="")

    with (
        django_capture_on_commit_callbacks(execute=True) as callbacks,
        pytest.raises(InvalidParameters) as raised,
    ):
        ticket_email_resend(ticket=ticket)

    assert raised.value.extra["fields"] == {"email": ["The holder has no email address."]}
    assert callbacks == [] and mail.outbox == []
