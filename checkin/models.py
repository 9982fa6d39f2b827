"""The gate's records: the check-in types admitted on each ticket, the audit log of every
check-in and renew, and the scanners' uploaded scans.

Moved from `tickets` with their tables, which keep their names (`tickets_ticketcheckin`,
`tickets_checkinlog`, `tickets_scanrecord`), columns, indexes and constraints: only Django's
state moved (checkin.0001, tickets.0016).
"""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import formats, timezone
from django.utils.translation import gettext_lazy as _


class TicketCheckIn(models.Model):
    """A check-in type currently admitted on a ticket (multi check-in events).

    The unique pair is what makes "each type succeeds once per ticket" a database rule;
    renewing a type deletes its row.
    """

    ticket = models.ForeignKey(
        "tickets.Ticket", on_delete=models.CASCADE, related_name="type_check_ins"
    )
    check_in_type = models.ForeignKey(
        "events.CheckInType", on_delete=models.CASCADE, related_name="ticket_check_ins"
    )
    used_at = models.DateTimeField()

    class Meta:
        db_table = "tickets_ticketcheckin"
        constraints = [
            models.UniqueConstraint(
                fields=["ticket", "check_in_type"], name="ticket_check_in_unique_type"
            )
        ]

    def __str__(self) -> str:
        return f"{self.ticket} @ {self.check_in_type.name}"


def _optional_unindexed(to: str) -> models.ForeignKey:
    """A reference the row may lack, kept when its target goes, with no index of its own (the
    partial indexes of `CheckInLog.Meta` serve its lookups)."""
    return models.ForeignKey(
        to, on_delete=models.SET_NULL, blank=True, null=True, related_name="+", db_index=False
    )


class CheckInLog(models.Model):
    """Audit row written by every check-in and renew, whoever made it."""

    class Action(models.TextChoices):
        CHECK_IN = "check_in", "Check-in"
        RENEW = "renew", "Renew (undo check-in)"

    # Every check-in writes a row, and each index of the table with it: the foreign keys' own
    # indexes are left out where `Meta.indexes` serves their lookups (partial where the key is
    # mostly NULL: a gate's check-in has no type in simple mode, and one actor of two).
    ticket = models.ForeignKey(
        "tickets.Ticket", on_delete=models.CASCADE, related_name="check_in_logs", db_index=False
    )
    check_in_type = _optional_unindexed("events.CheckInType")
    action = models.CharField(max_length=16, choices=Action.choices)
    at = models.DateTimeField(help_text="Check-in time as the gate reported it.")
    actor_user = _optional_unindexed(settings.AUTH_USER_MODEL)
    actor_application = _optional_unindexed(settings.OAUTH2_PROVIDER_APPLICATION_MODEL)
    nfc_uid = models.CharField(max_length=64, blank=True, null=True)
    note = models.TextField(blank=True)
    # The ticket's event, so the live counts' timeline reads one index (CONTRACT §12).
    event = models.ForeignKey(
        "events.Event", on_delete=models.CASCADE, blank=True, null=True, related_name="+"
    )
    # A scanner's upload (CONTRACT §11): the scan's id, and for a rejected scan its error code.
    scan_id = models.CharField(max_length=64, blank=True, null=True)
    error = models.CharField(max_length=32, blank=True, null=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "tickets_checkinlog"
        ordering = ["-created_at", "-id"]
        verbose_name = _("check-in record")
        verbose_name_plural = _("check-in history")
        indexes = [
            models.Index(fields=["ticket", "created_at"], name="check_in_log_ticket_idx"),
            models.Index(
                fields=["event", "at"],
                condition=Q(action="check_in", error__isnull=True),
                name="check_in_log_timeline_idx",
            ),
            models.Index(
                fields=["scan_id"], condition=Q(scan_id__isnull=False), name="check_in_log_scan_idx"
            ),
            models.Index(
                fields=["check_in_type"],
                condition=Q(check_in_type__isnull=False),
                name="check_in_log_type_idx",
            ),
            models.Index(
                fields=["actor_user"],
                condition=Q(actor_user__isnull=False),
                name="check_in_log_user_idx",
            ),
            models.Index(
                fields=["actor_application"],
                condition=Q(actor_application__isnull=False),
                name="check_in_log_application_idx",
            ),
        ]

    def __str__(self) -> str:
        # Staff read it beside the admin's date columns: the same local time, the same format.
        at = formats.localize(timezone.localtime(self.at))
        return f"{self.get_action_display()} {self.ticket} at {at}"


class ScanRecord(models.Model):
    """One scan of a scanner's upload (CONTRACT §11), whatever its outcome, with the result it
    got. The unique (event, scan_id) decides which of two uploads of a scan applies it: the
    records are written last in the transaction that applies their chunk of scans, so the
    upload that collides rolls its chunk back and replays the scans recorded first.
    """

    event = models.ForeignKey("events.Event", on_delete=models.CASCADE, related_name="+")
    scan_id = models.CharField(max_length=64)
    action = models.CharField(max_length=16, choices=CheckInLog.Action.choices)
    ticket = models.ForeignKey(
        "tickets.Ticket", on_delete=models.SET_NULL, blank=True, null=True, related_name="+"
    )
    success = models.BooleanField()
    error = models.CharField(max_length=32, blank=True, null=True)
    result = models.JSONField(help_text="The first result, as replayed.")
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, blank=True, null=True, related_name="+"
    )
    actor_application = models.ForeignKey(
        settings.OAUTH2_PROVIDER_APPLICATION_MODEL,
        on_delete=models.SET_NULL,
        blank=True,
        null=True,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "tickets_scanrecord"
        constraints = [
            models.UniqueConstraint(fields=["event", "scan_id"], name="scan_record_unique_scan")
        ]

    def __str__(self) -> str:
        return self.scan_id
