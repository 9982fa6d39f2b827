"""The check-in log admin: every check-in and undo across events, read-only, with the scans
that scanners uploaded (CONTRACT §11) and the tickets two offline gates both admitted."""

from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from events.admin import EventFilter
from organizers.admin_scoping import OrganizerScopedAdmin
from tickets.exceptions import TicketAlreadyUsed

from ..models import CheckInLog
from .inlines import CHECK_IN_LOG_COLUMNS


class LogEventFilter(EventFilter):
    field_path = "ticket__event_id"


class UploadedScanFilter(admin.SimpleListFilter):
    """Which rows came from a scanner's upload, and how the server took them.

    An uploaded check-in refused as `ticket_already_used` is a ticket that some gate admitted
    offline while it was admitted elsewhere: a person let in twice, or a ticket copied.
    """

    title = _("uploaded scans")
    parameter_name = "scan"

    def lookups(self, request, model_admin):
        return [
            ("twice", _("Admitted twice offline")),
            ("rejected", _("Rejected")),
            ("applied", _("Applied")),
            ("live", _("Not uploaded")),
        ]

    def queryset(self, request, queryset):
        uploaded = queryset.filter(scan_id__isnull=False)
        match self.value():
            case "twice":
                return uploaded.filter(
                    action=CheckInLog.Action.CHECK_IN, error=TicketAlreadyUsed.code
                )
            case "rejected":
                return uploaded.filter(error__isnull=False)
            case "applied":
                return uploaded.filter(error__isnull=True)
            case "live":
                return queryset.filter(scan_id__isnull=True)
        return queryset


@admin.register(CheckInLog)
class CheckInLogAdmin(OrganizerScopedAdmin):
    """Every check-in and undo across events: the audit trail, read-only."""

    allow_add = False
    allow_change = False
    allow_delete = False
    list_display = [
        "created_at",
        "action",
        "ticket",
        "event_title",
        *CHECK_IN_LOG_COLUMNS,
        "scan_id",
        "error",
    ]
    list_select_related = ["ticket__event", "check_in_type", "actor_user", "actor_application"]
    list_filter = ["action", UploadedScanFilter, LogEventFilter]
    search_fields = ["=ticket__reference_code", "=nfc_uid", "=scan_id"]
    show_full_result_count = False
    list_per_page = 100

    @admin.display(description=_("event"))
    def event_title(self, obj):
        return obj.ticket.event.title

    @admin.display(description=_("check-in type"))
    def check_in_type_name(self, obj):
        return obj.check_in_type.name if obj.check_in_type_id else "—"
