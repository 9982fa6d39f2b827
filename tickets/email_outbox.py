"""The outbox of ticket emails: an email is asked for as a queued row of `TicketEmail`, written
with the ticket (or the request to send it again), and a relay hands the queued rows to tasks.

The issuing statement (`tickets.statements`) writes its row in the same statement as the ticket,
so a creation is one round trip and never waits for the task table; the ORM paths (the importer,
SQLite, "send again") write theirs with `ticket_emails_queue`. The relay (`ticket_email_relay`,
run by each worker of the email queue: `manage.py run_worker`) claims queued rows with `SELECT
... FOR UPDATE SKIP LOCKED` and enqueues one `ticket_email_send` task each through django-tasks'
`enqueue`, in the transaction that takes them out of the outbox: none is sent twice or lost.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from django.db import transaction
from django.utils import timezone

from ticketing.outbox import relay_forever

from .email_status import TicketEmail
from .models import Ticket
from .tasks import ticket_email_send

# Emails a relay pass hands over at most: one INSERT of a task each.
RELAY_LIMIT = 200


def ticket_emails_queue(tickets: Iterable[Ticket]) -> None:
    """Ask for each ticket's email (a ticket without an address has none to send), in the
    current transaction if there is one. A ticket already emailed is queued again."""
    now = timezone.now()
    rows = [_queued(ticket, now) for ticket in tickets if ticket.email]
    if rows:
        TicketEmail.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["ticket"],
            update_fields=["status", "attempts", "recipient", "error", "at", "queued_at"],
        )


def _queued(ticket: Ticket, now) -> TicketEmail:
    return TicketEmail(
        ticket=ticket,
        status=TicketEmail.Status.QUEUED,
        attempts=0,
        recipient=ticket.email,
        error="",
        at=now,
        queued_at=now,
    )


def ticket_email_relay(*, limit: int = RELAY_LIMIT) -> int:
    """Hand the oldest queued emails, up to `limit`, to tasks; how many there were.

    Locks: the claimed rows (skipping those another relay holds) until the commit, which takes
    them out of the outbox with their tasks queued. On SQLite, which has no row locks, the write
    serializes relays: the rows are taken by the UPDATE, and read back by its stamp.
    """
    stamp = timezone.now()
    with transaction.atomic():
        claimed = list(
            TicketEmail.objects.filter(queued_at__isnull=False)
            .order_by("queued_at")
            .select_for_update(skip_locked=True)
            .values_list("pk", flat=True)[:limit]
        )
        if not claimed:
            return 0
        taken = TicketEmail.objects.filter(pk__in=claimed, queued_at__isnull=False).update(
            queued_at=None, at=stamp
        )
        if taken != len(claimed):  # another relay took some first (SQLite)
            claimed = list(
                TicketEmail.objects.filter(
                    pk__in=claimed, queued_at=None, at=stamp, status=TicketEmail.Status.QUEUED
                ).values_list("pk", flat=True)
            )
        for ticket_id in claimed:
            ticket_email_send.enqueue(ticket_id)
    return len(claimed)


def ticket_email_relay_forever(*, poll_seconds: float, stop: Callable[[], bool]) -> None:
    """Relay until `stop()` (`ticketing.outbox.relay_forever`)."""
    relay_forever(ticket_email_relay, limit=RELAY_LIMIT, poll_seconds=poll_seconds, stop=stop)
