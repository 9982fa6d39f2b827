"""The check-in log admin: every check-in and undo across events, read-only."""

from django.contrib import admin

from events.admin import EventFilter
from organizers.admin_scoping import OrganizerScopedAdmin

from ..models import CheckInLog
from .forms import CHECK_IN_LOG_COLUMNS


class LogEventFilter(EventFilter):
    field_path = "ticket__event_id"


@admin.register(CheckInLog)
class CheckInLogAdmin(OrganizerScopedAdmin):
    """Every check-in and undo across events: the audit trail, read-only."""

    allow_add = False
    allow_change = False
    allow_delete = False
    list_display = ["created_at", "action", "ticket", "event_title", *CHECK_IN_LOG_COLUMNS]
    list_select_related = ["ticket__event", "check_in_type", "actor_user", "actor_application"]
    list_filter = ["action", LogEventFilter]
    search_fields = ["=ticket__reference_code", "=nfc_uid"]
    show_full_result_count = False
    list_per_page = 100

    @admin.display(description="event")
    def event_title(self, obj):
        return obj.ticket.event.title

    @admin.display(description="check-in type")
    def check_in_type_name(self, obj):
        return obj.check_in_type.name if obj.check_in_type_id else "—"
