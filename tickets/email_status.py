"""The ticket email's state, for support staff, and the outbox of the emails to send.

"Did my ticket email go out?" is what holders ask first, and the admin's ticket page answers it.
A table of its own, one row per ticket that had an email, rather than columns of Ticket: the
gate writes ticket rows on every check-in, and nothing there needs to know about mail.

An email is asked for by writing its row as queued (`queued_at` set), in the transaction or the
statement that issues the ticket: a rollback sends nothing and a commit loses nothing. A relay
in the email workers hands the queued rows to tasks (`tickets.email_outbox`).
"""

from django.db import models
from django.utils.translation import gettext_lazy as _


class TicketEmail(models.Model):
    """Recorded from Django's mail backend: `send()` returned, or raised (and is retried)."""

    class Status(models.TextChoices):
        QUEUED = "queued", _("Queued")
        SENT = "sent", _("Sent")
        RETRYING = "retrying", _("Failed, will be retried")
        FAILED = "failed", _("Failed")

    ticket = models.OneToOneField(
        "tickets.Ticket",
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="email_status",
        verbose_name=_("ticket"),
    )
    status = models.CharField(max_length=16, choices=Status.choices, verbose_name=_("status"))
    attempts = models.PositiveSmallIntegerField(default=1, verbose_name=_("attempts"))
    recipient = models.EmailField(
        help_text=_("The address it went (or was to go) to."), verbose_name=_("recipient")
    )
    error = models.CharField(max_length=500, blank=True, verbose_name=_("error"))
    at = models.DateTimeField(
        help_text=_("When the last attempt ended, or when it was queued."), verbose_name=_("at")
    )
    queued_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text=_("Asked for and not yet handed to a worker: the outbox."),
        verbose_name=_("queued at"),
    )

    class Meta:
        verbose_name_plural = _("ticket emails")
        verbose_name = _("ticket email")
        indexes = [
            models.Index(
                fields=["queued_at"],
                condition=models.Q(queued_at__isnull=False),
                name="ticket_email_outbox_idx",
            )
        ]

    def __str__(self) -> str:
        return f"{self.ticket_id}: {self.get_status_display()}"
