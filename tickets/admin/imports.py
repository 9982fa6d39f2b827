"""Attendee import in the admin: upload a CSV, see what would be created and every rejected
line, then confirm (`tickets.services.import_upload`: the row service of `import_tickets`, so
the admin and the command accept and reject exactly the same rows). The confirmed run re-reads
the same text (carried in the preview's form) and checks every row again.
"""

from __future__ import annotations

from django import forms
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from events.models import Event
from organizers.admin_scoping import can_manage
from ticketing.api.exceptions import ApplicationError

from ..services.csv_input import CsvUnreadable
from ..services.import_upload import REPORT_ROWS, tickets_import_text, upload_decoded
from .ticket_tools import event_id_param

# An upload from a browser, read whole: larger files belong to `import_tickets`.
MAX_UPLOAD_BYTES = 2 * 1024 * 1024


class UploadForm(forms.Form):
    file = forms.FileField(label=gettext_lazy("CSV file"))
    notify = forms.BooleanField(
        label=gettext_lazy("Email each new ticket to its holder"), required=False
    )


class ConfirmForm(forms.Form):
    text = forms.CharField(widget=forms.HiddenInput, strip=False)
    notify = forms.BooleanField(required=False, widget=forms.HiddenInput)


class TicketImportMixin:
    """For `TicketAdmin`: the import page at `import/?event_id=N` (owners and admins)."""

    def get_urls(self):
        own = [
            path(
                "import/",
                self.admin_site.admin_view(self.import_view),
                name="tickets_ticket_import",
            )
        ]
        return own + super().get_urls()

    def import_view(self, request):
        event = get_object_or_404(Event, pk=event_id_param(request))
        if not can_manage(request, event.organizer_id):
            raise Http404  # another organizer's event is not revealed
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": _("Import attendees into %(event)s") % {"event": event.title},
            "event": event,
            "form": UploadForm(),
        }
        if request.method == "POST" and "confirm" in request.POST:
            form = ConfirmForm(request.POST)
            if form.is_valid():
                return self._confirm(request, event, form.cleaned_data)
        elif request.method == "POST":
            form = UploadForm(request.POST, request.FILES)
            context["form"] = form
            if form.is_valid():
                context.update(self._preview(request, event, form))
        return TemplateResponse(request, "admin/tickets/ticket/import.html", context)

    def _preview(self, request, event, form) -> dict:
        upload = form.cleaned_data["file"]
        if upload.size > MAX_UPLOAD_BYTES:
            form.add_error("file", _("The file is over 2 MB: use `manage.py import_tickets`."))
            return {}
        try:
            text = upload_decoded(upload.read())
            report = tickets_import_text(
                event=event,
                text=text,
                user=request.user,
                notify=form.cleaned_data["notify"],
                dry_run=True,
            )
        except CsvUnreadable as exc:
            form.add_error("file", exc.message)
            return {}
        except ApplicationError as exc:
            form.add_error(None, exc.message)
            return {}
        confirm = ConfirmForm(initial={"text": text, "notify": form.cleaned_data["notify"]})
        return {"report": report, "confirm_form": confirm, "preview_rows": REPORT_ROWS}

    def _confirm(self, request, event, data):
        try:
            report = tickets_import_text(
                event=event,
                text=data["text"],
                user=request.user,
                notify=data["notify"],
                dry_run=False,
            )
        except (CsvUnreadable, ApplicationError) as exc:
            self.message_user(request, exc.message, level="error")
            return redirect(reverse("admin:tickets_ticket_import") + f"?event_id={event.pk}")
        self.message_user(
            request,
            ngettext(
                "Imported %(created)d ticket (%(existing)d already imported, %(rejected)d "
                "rejected).",
                "Imported %(created)d tickets (%(existing)d already imported, %(rejected)d "
                "rejected).",
                report.created,
            )
            % {"created": report.created, "existing": report.existing, "rejected": report.rejected},
        )
        return redirect(reverse("admin:tickets_ticket_changelist") + f"?event_id={event.pk}")
