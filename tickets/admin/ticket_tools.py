"""What the ticket admin adds to Django's pages: buttons on one ticket's page (the list's own
actions, applied to that ticket), its attendee page link, and the CSV and XLSX exports.

The buttons post to `<ticket>/do/<action>/`, which runs the very action method the list runs
(same services, same messages, same intermediate page for a note or a check-in type) on a
queryset of that one ticket, then returns to the ticket's page.
"""

from __future__ import annotations

import tempfile

from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpResponseNotAllowed, StreamingHttpResponse
from django.shortcuts import redirect
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from events.models import Event
from organizers.admin_scoping import is_member
from ticketing.api.fields import INT32_MAX

from ..models import Order, Ticket
from ..services.exporting import (
    XLSX_CONTENT_TYPE,
    orders_csv,
    orders_xlsx,
    tickets_csv,
    tickets_xlsx,
)
from ..services.pages import ticket_page_token_regenerate, ticket_page_url

# The list's actions a ticket's page offers as buttons, and what each button says.
PAGE_ACTIONS = {
    "check_in": gettext_lazy("Check in"),
    "undo_check_in": gettext_lazy("Undo check-in"),
    "revoke": gettext_lazy("Revoke…"),
    "resend_email": gettext_lazy("Resend email"),
    "regenerate_page_link": gettext_lazy("New ticket page link"),
}


def csv_response(lines, filename: str) -> StreamingHttpResponse:
    """A CSV download streamed line by line: the rows are never all in memory."""
    response = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def xlsx_response(write, queryset, filename: str) -> FileResponse:
    """An XLSX download: the workbook is written to a temporary file (openpyxl's write-only
    mode keeps its rows on disk too), then streamed from it."""
    spool = tempfile.TemporaryFile()  # noqa: SIM115 (FileResponse closes it)
    write(queryset, spool)
    spool.seek(0)
    return FileResponse(
        spool, as_attachment=True, filename=filename, content_type=XLSX_CONTENT_TYPE
    )


def _export(request, queryset, csv_lines, write_xlsx, name: str):
    """`?format=xlsx` for a workbook, else CSV."""
    if request.GET.get("format") == "xlsx":
        return xlsx_response(write_xlsx, queryset, f"{name}.xlsx")
    return csv_response(csv_lines(queryset), f"{name}.csv")


def event_id_param(request) -> int:
    """The `event_id` an export or import names. Raises: Http404 (missing or malformed)."""
    raw = request.GET.get("event_id", "")
    if not (raw.isascii() and raw.isdigit()) or int(raw) > INT32_MAX:
        raise Http404
    return int(raw)


class TicketPageToolsMixin:
    """For `TicketAdmin`: ticket page buttons, the attendee page link, and the exports."""

    change_form_template = "admin/tickets/ticket/change_form.html"

    def get_urls(self):
        own = [
            path(
                "<path:object_id>/do/<str:action>/",
                self.admin_site.admin_view(self.ticket_action_view),
                name="tickets_ticket_do",
            ),
            path(
                "export/",
                self.admin_site.admin_view(self.export_view),
                name="tickets_ticket_export",
            ),
            path(
                "export-orders/",
                self.admin_site.admin_view(self.export_orders_view),
                name="tickets_order_export",
            ),
        ]
        return own + super().get_urls()

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None and is_member(request, obj.event.organizer_id):
            context["ticket_buttons"] = [
                (reverse("admin:tickets_ticket_do", args=[obj.pk, name]), label)
                for name, label in PAGE_ACTIONS.items()
            ]
        return super().render_change_form(request, context, add, change, form_url, obj)

    def ticket_action_view(self, request, object_id, action):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if action not in PAGE_ACTIONS:
            raise Http404
        ticket = self.get_object(request, object_id)  # another organizer's ticket: None
        if ticket is None:
            raise Http404
        if not is_member(request, ticket.event.organizer_id):
            raise PermissionDenied
        if action == "regenerate_page_link":
            ticket_page_token_regenerate(ticket=ticket)
            self.message_user(request, _("The ticket page has a new link; the old one is dead."))
        else:
            # `apply` comes only from the intermediate page's form, which posts back here.
            queryset = self.get_queryset(request).filter(pk=ticket.pk)
            response = getattr(self, action)(request, queryset)
            if response is not None:
                return response
        return redirect("admin:tickets_ticket_change", ticket.pk)

    def page_link(self, obj):
        if not obj.pk:
            return "—"
        url = ticket_page_url(obj)
        return format_html('<a href="{}" target="_blank" rel="noopener">{}</a>', url, url)

    page_link.short_description = gettext_lazy("ticket page")

    def _scoped_event_id(self, request) -> int:
        """The requested event, if the user is a member of its organizer; else a 404."""
        event_id = event_id_param(request)
        organizer_id = Event.objects.filter(pk=event_id).values_list("organizer_id", flat=True)
        if not is_member(request, next(iter(organizer_id), None)):
            raise Http404
        return event_id

    def export_view(self, request):
        event_id = self._scoped_event_id(request)
        tickets = Ticket.objects.filter(event_id=event_id)
        return _export(request, tickets, tickets_csv, tickets_xlsx, f"event-{event_id}-tickets")

    def export_orders_view(self, request):
        event_id = self._scoped_event_id(request)
        orders = Order.objects.filter(event_id=event_id)
        return _export(request, orders, orders_csv, orders_xlsx, f"event-{event_id}-orders")

    def export_csv(self, request, queryset):
        """The action: the selected tickets (or every match, "select all") as CSV."""
        return csv_response(tickets_csv(queryset), "tickets.csv")

    export_csv.short_description = gettext_lazy("Export as CSV")
    export_csv.allowed_permissions = ("view",)

    def export_xlsx(self, request, queryset):
        """The action: the selected tickets (or every match) as an Excel workbook."""
        return xlsx_response(tickets_xlsx, queryset, "tickets.xlsx")

    export_xlsx.short_description = gettext_lazy("Export as Excel (XLSX)")
    export_xlsx.allowed_permissions = ("view",)
