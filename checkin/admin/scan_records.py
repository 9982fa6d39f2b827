"""Scans with an id (CONTRACT §7, §11), read-only: every scan a scanner uploaded or sent online
with a scan id, with the answer it got (an online one's HTTP status too), including those that
named no ticket of the event, which the check-in log cannot show."""

from django.contrib import admin

from events.admin import EventFilter
from organizers.admin_scoping import OrganizerScopedAdmin

from ..models import ScanRecord


@admin.register(ScanRecord)
class ScanRecordAdmin(OrganizerScopedAdmin):
    allow_add = False
    allow_change = False
    allow_delete = False
    list_display = ["created_at", "scan_id", "action", "ticket", "event", "success", "error"]
    list_select_related = ["ticket", "event"]
    list_filter = ["success", "error", "action", EventFilter]
    search_fields = ["=scan_id", "=ticket__reference_code"]
    readonly_fields = [
        "event",
        "scan_id",
        "action",
        "ticket",
        "success",
        "error",
        "result",
        "status_code",
        "actor_user",
        "actor_application",
        "created_at",
    ]
    fields = readonly_fields
    show_full_result_count = False
    list_per_page = 100
