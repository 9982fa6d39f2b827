"""Resending a ticket email: the rule lives in the service, whichever interface calls it."""

import pytest
from django.core import mail

from tests.factories import TicketFactory
from tests.task_support import run_due_tasks
from ticketing.api.exceptions import InvalidParameters
from tickets.exceptions import TicketRevoked
from tickets.services.emailing import ticket_email_resend

pytestmark = pytest.mark.django_db


def test_ticket_email_resend_sends_once_through_a_task():
    ticket = TicketFactory(email="holder@example.com", reference_code="RESEND01")

    ticket_email_resend(ticket=ticket)
    assert mail.outbox == []  # a worker sends it

    assert run_due_tasks() == 1
    assert [m.to for m in mail.outbox] == [["holder@example.com"]]
    assert "RESEND01" in mail.outbox[0].body


def test_ticket_email_resend_refuses_a_revoked_ticket():
    ticket = TicketFactory(status="revoked", reference_code="RESEND02")

    with pytest.raises(TicketRevoked) as raised:
        ticket_email_resend(ticket=ticket)

    assert raised.value.code == "ticket_revoked"
    assert raised.value.extra["ticket"]["reference_code"] == "RESEND02"
    assert run_due_tasks() == 0 and mail.outbox == []


def test_ticket_email_resend_refuses_a_ticket_without_email():
    ticket = TicketFactory(email="")

    with pytest.raises(InvalidParameters) as raised:
        ticket_email_resend(ticket=ticket)

    assert raised.value.extra["fields"] == {"email": ["The holder has no email address."]}
    assert run_due_tasks() == 0 and mail.outbox == []
