"""The ticket emails' outbox (`tickets.email_outbox`): an email asked for is a queued row, written
with the ticket; a relay hands each to one task, once, whichever relays run."""

import threading

import pytest
from django.db import connection, transaction
from django_tasks_db.models import DBTaskResult

from tests.factories import TicketFactory
from tests.task_support import run_due_tasks
from tickets.email_outbox import ticket_email_relay, ticket_emails_queue
from tickets.email_status import TicketEmail
from tickets.services.emailing import ticket_email_resend


@pytest.mark.django_db
def test_queued_email_becomes_one_task_and_leaves_the_outbox():
    tickets = TicketFactory.create_batch(3)
    ticket_emails_queue(tickets)
    assert set(TicketEmail.objects.values_list("status", "attempts")) == {("queued", 0)}
    assert not DBTaskResult.objects.exists()  # no task until the relay hands it over

    assert ticket_email_relay() == 3
    assert sorted(r.args_kwargs["args"][0] for r in DBTaskResult.objects.all()) == sorted(
        t.pk for t in tickets
    )
    assert not TicketEmail.objects.filter(queued_at__isnull=False).exists()
    assert ticket_email_relay() == 0  # nothing twice


@pytest.mark.django_db
def test_a_ticket_without_an_address_has_no_email_to_queue():
    ticket_emails_queue([TicketFactory(email="")])
    assert not TicketEmail.objects.exists()


@pytest.mark.django_db
def test_sending_again_queues_a_sent_email_again(mailoutbox):
    ticket = TicketFactory()
    ticket_emails_queue([ticket])
    assert run_due_tasks() == 1
    assert TicketEmail.objects.get().status == TicketEmail.Status.SENT

    ticket_email_resend(ticket=ticket)
    record = TicketEmail.objects.get()
    assert (record.status, record.attempts, record.queued_at is not None) == ("queued", 0, True)
    assert run_due_tasks() == 1
    assert len(mailoutbox) == 2
    assert TicketEmail.objects.get().status == TicketEmail.Status.SENT


@pytest.mark.django_db
def test_relay_hands_over_at_most_its_limit_per_pass():
    ticket_emails_queue(TicketFactory.create_batch(5))
    assert [ticket_email_relay(limit=2) for _ in range(4)] == [2, 2, 1, 0]
    assert DBTaskResult.objects.count() == 5


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_relays_running_at_once_hand_each_email_over_once():
    ticket_emails_queue(TicketFactory.create_batch(40))
    held, go = threading.Event(), threading.Event()
    counts = []

    def slow_relay():
        # Claims its rows and holds them until the other relay has run.
        with transaction.atomic():
            counts.append(ticket_email_relay(limit=25))
            held.set()
            go.wait(10)
        connection.close()

    first = threading.Thread(target=slow_relay)
    first.start()
    assert held.wait(10)
    counts.append(ticket_email_relay())  # skips the rows the first holds
    go.set()
    first.join(10)
    assert sorted(counts) == [15, 25]
    args = [r.args_kwargs["args"][0] for r in DBTaskResult.objects.all()]
    assert len(args) == len(set(args)) == 40
