"""The gate's records: the check-in types admitted on each ticket, the audit log of every
check-in and renew, and the scanners' uploaded scans.

Moved from `tickets` with their tables, which keep their names (`tickets_ticketcheckin`,
`tickets_checkinlog`, `tickets_scanrecord`), columns, indexes and constraints: only Django's
state moved (checkin.0001, tickets.0016).
"""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext as gettext_now
from django.utils.translation import gettext_lazy as _

from ticketing.dates import admin_date


class TicketCheckIn(models.Model):
    """A check-in type currently admitted on a ticket (multi check-in events).

    The unique pair is what makes "each type succeeds once per ticket" a database rule;
    renewing a type deletes its row.
    """

    ticket = models.ForeignKey(
        "tickets.Ticket",
        on_delete=models.CASCADE,
        related_name="type_check_ins",
        verbose_name=_("ticket"),
    )
    check_in_type = models.ForeignKey(
        "events.CheckInType",
        on_delete=models.CASCADE,
        related_name="ticket_check_ins",
        verbose_name=_("check in type"),
    )
    used_at = models.DateTimeField(verbose_name=_("used at"))

    class Meta:
        verbose_name = _("ticket check-in")
        verbose_name_plural = _("ticket check-ins")
        db_table = "tickets_ticketcheckin"
        constraints = [
            models.UniqueConstraint(
                fields=["ticket", "check_in_type"], name="ticket_check_in_unique_type"
            )
        ]

    def __str__(self) -> str:
        return f"{self.ticket} @ {self.check_in_type.name}"


def _optional_unindexed(to: str, *, verbose_name) -> models.ForeignKey:
    """A reference the row may lack, kept when its target goes, with no index of its own (the
    partial indexes of `CheckInLog.Meta` serve its lookups)."""
    return models.ForeignKey(
        to,
        on_delete=models.SET_NULL,
        blank=True,
        null=True,
        related_name="+",
        db_index=False,
        verbose_name=verbose_name,
    )


class CheckInLog(models.Model):
    """Audit row written by every check-in and renew, whoever made it."""

    class Action(models.TextChoices):
        CHECK_IN = "check_in", _("Check-in")
        RENEW = "renew", _("Renew (undo check-in)")

    # Every check-in writes a row, and each index of the table with it: the foreign keys' own
    # indexes are left out where `Meta.indexes` serves their lookups (partial where the key is
    # mostly NULL: a gate's check-in has no type in simple mode, and one actor of two).
    ticket = models.ForeignKey(
        "tickets.Ticket",
        on_delete=models.CASCADE,
        related_name="check_in_logs",
        db_index=False,
        verbose_name=_("ticket"),
    )
    check_in_type = _optional_unindexed("events.CheckInType", verbose_name=_("check in type"))
    action = models.CharField(max_length=16, choices=Action.choices, verbose_name=_("action"))
    at = models.DateTimeField(
        help_text=_("Check-in time as the gate reported it."), verbose_name=_("at")
    )
    actor_user = _optional_unindexed(settings.AUTH_USER_MODEL, verbose_name=_("actor user"))
    actor_application = _optional_unindexed(
        settings.OAUTH2_PROVIDER_APPLICATION_MODEL, verbose_name=_("actor application")
    )
    nfc_uid = models.CharField(max_length=64, blank=True, null=True, verbose_name=_("nfc uid"))
    note = models.TextField(blank=True, verbose_name=_("note"))
    # The ticket's event, so the live counts' timeline reads one index (CONTRACT §12).
    event = models.ForeignKey(
        "events.Event",
        on_delete=models.CASCADE,
        blank=True,
        null=True,
        related_name="+",
        verbose_name=_("event"),
    )
    # A scanner's upload (CONTRACT §11): the scan's id, and for a rejected scan its error code.
    scan_id = models.CharField(max_length=64, blank=True, null=True, verbose_name=_("scan id"))
    error = models.CharField(max_length=32, blank=True, null=True, verbose_name=_("error"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))

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
        return gettext_now("%(action)s %(ticket)s at %(time)s") % {
            "action": self.get_action_display(),
            "ticket": self.ticket,
            "time": admin_date(self.at),
        }


class ScanRecord(models.Model):
    """What was answered to scan id X in event E (CONTRACT §7 retry-safe scans, §11), whatever
    the outcome, by an upload or by an online check-in or renew. The unique (event, scan_id)
    decides which of two requests carrying the scan applies it: an upload writes its records
    last in the transaction that applies its chunk of scans, so the upload that collides rolls
    its chunk back and replays the scans recorded first; an online scan claims its record first
    (`checkin.services.scans`), so a second one waits for the first to commit and replays it.

    `result` of an admission by the gate's one statement (`checkin.services.statements`
    `admit_scan`) is not the body but the image of the ticket's row the body was rendered from
    (`tickets.selectors.ticket_image_sql`), which the replay renders again.
    """

    event = models.ForeignKey(
        "events.Event", on_delete=models.CASCADE, related_name="+", verbose_name=_("event")
    )
    scan_id = models.CharField(max_length=64, verbose_name=_("scan id"))
    action = models.CharField(
        max_length=16, choices=CheckInLog.Action.choices, verbose_name=_("action")
    )
    ticket = models.ForeignKey(
        "tickets.Ticket",
        on_delete=models.SET_NULL,
        blank=True,
        null=True,
        related_name="+",
        verbose_name=_("ticket"),
    )
    success = models.BooleanField(verbose_name=_("success"))
    error = models.CharField(max_length=32, blank=True, null=True, verbose_name=_("error"))
    result = models.JSONField(
        help_text=_("The first result, as replayed."), verbose_name=_("result")
    )
    status_code = models.PositiveSmallIntegerField(
        blank=True,
        null=True,
        help_text=_(
            "The HTTP status of an online scan's answer, whose body `result` holds; "
            "empty: an upload answered first, and `result` is its entry."
        ),
        verbose_name=_("status code"),
    )
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        blank=True,
        null=True,
        related_name="+",
        verbose_name=_("actor user"),
    )
    actor_application = models.ForeignKey(
        settings.OAUTH2_PROVIDER_APPLICATION_MODEL,
        on_delete=models.SET_NULL,
        blank=True,
        null=True,
        related_name="+",
        verbose_name=_("actor application"),
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("scan record")
        verbose_name_plural = _("scan records")
        db_table = "tickets_scanrecord"
        constraints = [
            models.UniqueConstraint(fields=["event", "scan_id"], name="scan_record_unique_scan")
        ]

    def __str__(self) -> str:
        return self.scan_id
