"""The holder's email (a task of the creating transaction: once, never on rollback, retried)
and the check-in query budget."""

import time
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core import mail
from django.core.mail.backends.base import BaseEmailBackend
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from checkin.models import CheckInLog
from tests.factories import CheckInTypeFactory, FormFieldFactory, TicketFactory
from tests.smtp_server import SmtpServer
from tests.task_support import run_due_tasks, scheduled_tasks
from tickets.models import Ticket, TicketFormAnswer
from tickets.services.common import Actor
from tickets.services.emailing import ticket_send_email
from tickets.services.issuing import ticket_create

from .helpers import checkin_url, client_for, tickets_url

HOLDER = {
    "firstname": "Malee",
    "lastname": "Srisuk",
    "email": "malee@example.com",
    "phone": "0891234567",
}


class FailingBackend(BaseEmailBackend):
    def send_messages(self, email_messages):
        raise ConnectionRefusedError("smtp down")


def _create(event, ticket_type, **kwargs):
    return ticket_create(
        event=event, ticket_type_id=ticket_type.id, actor=Actor(), **HOLDER, **kwargs
    )


@pytest.mark.django_db
@time_machine.travel(datetime(2026, 11, 20, 9, 0, tzinfo=UTC), tick=True)
def test_ticket_email_is_a_task_of_the_creation_and_has_text_and_html(event, ticket_type):
    """The email's date line is the point, so the clock stands two weeks before the event."""
    event.title = "Songkran Beats"
    event.location_name = "Impact Arena"
    event.location_address = "Nonthaburi"
    event.start_at = timezone.datetime.fromisoformat("2026-12-05T12:30:00+00:00")
    event.end_at = timezone.datetime.fromisoformat("2026-12-05T17:00:00+00:00")
    event.save()
    result = _create(event, ticket_type, reference_code="SONG-2026")
    assert mail.outbox == []  # the request does not send it: a worker does

    assert run_due_tasks() == 1
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["malee@example.com"]
    # The organizer's default language setting: Thai, with English below (CONTRACT §14).
    assert message.subject == (
        "บัตรของคุณ SONG-2026 สำหรับงาน Songkran Beats / Your ticket SONG-2026 for Songkran Beats"
    )
    # Start time in the site zone (Asia/Bangkok, +07:00), place from the event.
    for text in (message.body, message.alternatives[0].content):
        assert "SONG-2026" in text
        assert "Songkran Beats" in text
        assert "Saturday 5 December 2026, 19:30" in text
        assert "Impact Arena, Nonthaburi" in text
        assert "Malee Srisuk" in text
    assert message.alternatives[0].mimetype == "text/html"
    assert result.ticket.reference_code == "SONG-2026"


@pytest.mark.django_db
def test_ticket_email_html_escapes_event_fields(event, ticket_type):
    event.title = "<script>alert(1)</script>"
    event.save()
    _create(event, ticket_type)
    run_due_tasks()
    html = mail.outbox[0].alternatives[0].content
    assert "<script>" not in html
    assert "&lt;script&gt;" in html


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_ticket_email_sent_exactly_once_after_a_real_commit(user_token, event, ticket_type):
    client = client_for(user_token)
    body = {"ticket_type_id": ticket_type.id, **HOLDER, "external_id": "ONCE-1"}
    assert client.post(tickets_url(event), body).status_code == 200
    assert client.post(tickets_url(event), body).json()["idempotent"] is True
    assert run_due_tasks() == 1
    assert len(mail.outbox) == 1


@pytest.mark.django_db(transaction=True)
def test_ticket_email_not_sent_when_the_transaction_rolls_back(event, ticket_type):
    with pytest.raises(RuntimeError), transaction.atomic():
        _create(event, ticket_type)
        raise RuntimeError("the caller's transaction fails after the creation")
    assert run_due_tasks() == 0
    assert mail.outbox == []
    assert Ticket.objects.count() == 0
    assert DBTaskResult.objects.count() == 0
    ticket_type.refresh_from_db()
    assert ticket_type.sold_count == 0


@pytest.mark.django_db(transaction=True)
def test_ticket_email_not_sent_when_suppressed(event, ticket_type):
    _create(event, ticket_type, suppress_notifications=True)
    assert run_due_tasks() == 0
    assert mail.outbox == []


@pytest.mark.django_db(transaction=True)
def test_ticket_email_failure_does_not_undo_the_ticket(settings, user_token, event, ticket_type):
    settings.EMAIL_BACKEND = f"{__name__}.FailingBackend"
    response = client_for(user_token).post(
        tickets_url(event), {"ticket_type_id": ticket_type.id, **HOLDER}
    )
    assert response.status_code == 200
    ticket_id = response.json()["ticket"]["id"]
    assert run_due_tasks() == 1
    assert Ticket.objects.filter(pk=ticket_id).exists()


@pytest.mark.django_db(transaction=True)
def test_ticket_email_is_retried_with_backoff_until_the_server_answers(
    settings, event, ticket_type
):
    settings.EMAIL_BACKEND = f"{__name__}.FailingBackend"
    ticket = _create(event, ticket_type).ticket
    started = timezone.now()

    assert run_due_tasks() == 1  # refused: the retry waits a minute
    [retry] = scheduled_tasks()
    assert retry.args_kwargs["args"] == [ticket.id, 2]
    assert retry.run_after - started == pytest.approx(
        timedelta(minutes=1), abs=timedelta(seconds=5)
    )
    DBTaskResult.objects.filter(pk=retry.pk).update(run_after=timezone.now())
    assert run_due_tasks() == 1
    [retry] = scheduled_tasks()
    assert retry.args_kwargs["args"] == [ticket.id, 3]  # then two minutes
    assert retry.run_after - timezone.now() > timedelta(seconds=110)
    assert mail.outbox == []

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    DBTaskResult.objects.filter(pk=retry.pk).update(run_after=timezone.now())
    assert run_due_tasks() == 1
    assert [m.to for m in mail.outbox] == [["malee@example.com"]]
    assert scheduled_tasks() == []


@pytest.mark.django_db(transaction=True)
def test_a_mail_server_that_never_answers_does_not_slow_creation(
    settings, user_token, event, ticket_type
):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_TIMEOUT = "127.0.0.1", 2
    with SmtpServer(answering=False) as hung:
        settings.EMAIL_PORT = hung.port
        started = time.monotonic()
        response = client_for(user_token).post(
            tickets_url(event), {"ticket_type_id": ticket_type.id, **HOLDER}
        )
        took = time.monotonic() - started
        assert response.status_code == 200
        assert took < settings.EMAIL_TIMEOUT / 2, took  # it never waited for the server

        started = time.monotonic()
        assert run_due_tasks() == 1  # the worker's attempt: no greeting within EMAIL_TIMEOUT
        assert time.monotonic() - started >= settings.EMAIL_TIMEOUT
        assert hung.connections == 1
        [retry] = scheduled_tasks()

    with SmtpServer(answering=True) as smtp:
        settings.EMAIL_PORT = smtp.port
        DBTaskResult.objects.filter(pk=retry.pk).update(run_after=timezone.now())
        assert run_due_tasks() == 1
    [message] = smtp.messages
    assert response.json()["ticket"]["reference_code"] in message
    assert "To: malee@example.com" in message


@pytest.mark.django_db
def test_ticket_send_email_resends_through_a_task(ticket):
    ticket_send_email(ticket=ticket)
    assert mail.outbox == []
    assert run_due_tasks() == 1
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == [ticket.email]


# --- Query budget ---------------------------------------------------------------------------

# Authentication: the token (1, the first time; later calls find it in the token cache) and the
# organizer with the caller's membership (1, the first time; later calls find the role kept with
# the token); an application token on its own organizer's path needs no organizer statement (its
# organizer exists while it does).
AUTH_QUERIES = 2
APPLICATION_AUTH_QUERIES = 1
# Whether a webhook endpoint of the organizer wants the event: one query of the locked path, in
# its transaction (webhooks.selectors); the statement asks it in SQL, for nothing more.
WEBHOOK_SUBSCRIPTIONS = 1
# The common case at the gate, on PostgreSQL: one statement admits the ticket, writes its audit
# row and returns it with its type, in autocommit (no BEGIN/COMMIT).
ADMIT_QUERIES = 1
# Everything else runs the locked service: event (1), the locked ticket with its order, type and
# "has check-in types / form answers" flags (1), ticket UPDATE (1), audit INSERT (1), inside
# BEGIN and COMMIT, which Django logs as well.
LOCKED_QUERIES = 4
TRANSACTION_CONTROL = {"BEGIN", "COMMIT"}


@contextmanager
def assert_statements(data: int, *, in_transaction: bool = True):
    """Exactly `data` data statements, plus BEGIN and COMMIT when the service opens one."""
    with CaptureQueriesContext(connection) as context:
        yield
    statements = [q["sql"] for q in context.captured_queries]
    data_statements = [sql for sql in statements if sql not in TRANSACTION_CONTROL]
    assert len(data_statements) == data, "\n".join(data_statements)
    assert len(statements) == data + (2 if in_transaction else 0), statements


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("who", ["user", "application"])
def test_ticket_check_in_query_budget(who, user_token, app_token, ticket):
    client = client_for(user_token if who == "user" else app_token)
    auth = AUTH_QUERIES if who == "user" else APPLICATION_AUTH_QUERIES
    with assert_statements(auth + ADMIT_QUERIES, in_transaction=False):
        response = client.post(checkin_url(ticket), {"note": "x"})
    assert response.status_code == 200
    assert response.json()["ticket"]["status"] == "used"
    assert CheckInLog.objects.get(ticket=ticket).note == "x"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_ticket_check_in_with_cached_token_costs_one_statement(user_token, event):
    first, second = TicketFactory.create_batch(2, event=event)
    client = client_for(user_token)
    assert client.post(checkin_url(first)).status_code == 200
    with assert_statements(ADMIT_QUERIES, in_transaction=False):
        response = client.post(checkin_url(second))
    assert response.json()["ticket"]["status"] == "used"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_ticket_check_in_binding_a_tag_query_budget(user_token, ticket):
    with assert_statements(AUTH_QUERIES + WEBHOOK_SUBSCRIPTIONS + LOCKED_QUERIES):
        response = client_for(user_token).post(checkin_url(ticket), {"nfc_uid": "04BUDGET"})
    assert response.status_code == 200
    assert response.json()["ticket"]["status"] == "used"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_ticket_check_in_query_budget_with_form_answers(user_token, ticket):
    field = FormFieldFactory(event=ticket.event, label="T-shirt size")
    TicketFormAnswer.objects.create(ticket=ticket, field=field, value="L")
    # + the answers the body shows
    with assert_statements(AUTH_QUERIES + ADMIT_QUERIES + 1, in_transaction=False):
        response = client_for(user_token).post(checkin_url(ticket))
    assert response.json()["ticket"]["forms"] == [
        {"id": field.id, "label": "T-shirt size", "value": "L"}
    ]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("type_count", [1, 5])
def test_ticket_check_in_multi_query_budget_is_independent_of_type_count(
    user_token, event, type_count
):
    types = [CheckInTypeFactory(event=event) for _ in range(type_count)]
    ticket = TicketFactory(event=event)
    # One statement admits every requested type, writes their audit rows and returns the
    # ticket with each type's outcome, however many types.
    with assert_statements(AUTH_QUERIES + ADMIT_QUERIES, in_transaction=False):
        response = client_for(user_token).post(
            checkin_url(ticket), {"check_in_type_ids": [t.id for t in types]}, format="json"
        )
    assert response.json()["success"] is True
    assert len(response.json()["check_in_results"]) == type_count
