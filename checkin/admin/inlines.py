"""The gate's read-only inlines of the ticket admin page (`checkin.admin.tickets`): the check-in
types admitted on the ticket and its check-in history."""

from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from organizers.admin_scoping import ReadOnlyInline

from ..models import CheckInLog, TicketCheckIn

# What a check-in history row shows after its action, on the ticket's page and in the history list.
CHECK_IN_LOG_COLUMNS = [
    "check_in_type_name",
    "at",
    "actor_user",
    "actor_application",
    "nfc_uid",
    "note",
]


class CheckInLogInline(ReadOnlyInline, admin.TabularInline):
    """The ticket's check-in history, newest first."""

    model = CheckInLog
    parent_organizer_path = "event__organizer"
    verbose_name = _("check-in history entry")
    verbose_name_plural = _("check-in history")
    # A scanner's upload keeps rejected scans too: `error` tells them from admissions.
    fields = ["action", *CHECK_IN_LOG_COLUMNS, "scan_id", "error", "created_at"]
    readonly_fields = fields

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            # `ticket` too: the inline prints each row's str(), which names the ticket.
            .select_related("ticket", "check_in_type", "actor_user", "actor_application")
        )

    @admin.display(description=_("check-in type"))
    def check_in_type_name(self, obj):
        return obj.check_in_type.name if obj.check_in_type_id else "—"


class TicketCheckInInline(ReadOnlyInline, admin.TabularInline):
    """Check-in types currently admitted on the ticket (events with check-in types)."""

    model = TicketCheckIn
    parent_organizer_path = "event__organizer"
    verbose_name = _("admitted check-in type")
    verbose_name_plural = _("admitted check-in types")
    fields = ["check_in_type_name", "used_at"]
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("ticket", "check_in_type")

    @admin.display(description=_("check-in type"))
    def check_in_type_name(self, obj):
        return obj.check_in_type.name
