"""Background work of tickets, run by `manage.py run_worker` (django-tasks' database backend).

The holder's email is enqueued in the transaction that issues the ticket: a creation that rolls
back sends nothing, one that commits is sent even if no worker runs at that moment, and the
request never waits for the mail server.
"""

import logging
import smtplib
from datetime import timedelta

from django.utils import timezone
from django_tasks import task

from . import notifications

logger = logging.getLogger(__name__)

# Attempt n failed: the next is due 1, 2, 4 ... minutes later, at most an hour apart; the
# tenth failure (about six hours on) is the last.
EMAIL_RETRY_BASE = timedelta(minutes=1)
EMAIL_RETRY_MAX_DELAY = timedelta(hours=1)
EMAIL_ATTEMPTS = 10


def email_retry_delay(attempt: int) -> timedelta:
    return min(EMAIL_RETRY_BASE * 2 ** min(attempt - 1, 16), EMAIL_RETRY_MAX_DELAY)


@task(queue_name="email")
def ticket_email_send(ticket_id: int, attempt: int = 1) -> None:
    """Send the ticket email; a mail server that fails, refuses or times out
    (`EMAIL_TIMEOUT`) is tried again later, as a new task."""
    try:
        notifications.ticket_email_send(
            ticket_id=ticket_id, attempt=attempt, final=attempt >= EMAIL_ATTEMPTS
        )
    except (smtplib.SMTPException, OSError) as exc:
        if attempt >= EMAIL_ATTEMPTS:
            logger.error("ticket email for ticket %s failed %s times: %s", ticket_id, attempt, exc)
            raise
        delay = email_retry_delay(attempt)
        logger.warning(
            "ticket email for ticket %s failed (attempt %s: %r); next in %s",
            ticket_id,
            attempt,
            exc,
            delay,
        )
        ticket_email_send.using(run_after=timezone.now() + delay).enqueue(ticket_id, attempt + 1)
