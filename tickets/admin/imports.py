"""Attendee import in the admin: upload a CSV, see what would be created and every rejected
line, then confirm (`tickets.services.import_upload`: the row service of `import_tickets`, so
the admin and the command accept and reject exactly the same rows). The file stays on the
server between the two; the confirmation posts only the signed id naming it, and the confirmed
run reads the file again and checks every row again.
"""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect
from django.template.defaultfilters import filesizeformat
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from events.models import Event
from organizers.admin_scoping import can_manage
from ticketing.api.exceptions import ApplicationError

from ..services.csv_input import CsvUnreadable
from ..services.import_upload import (
    REPORT_ROWS,
    UploadGone,
    import_upload_keep,
    import_upload_take,
    tickets_import_text,
    upload_decoded,
)
from .ticket_tools import event_id_param


class UploadForm(forms.Form):
    file = forms.FileField(label=gettext_lazy("CSV file"))
    notify = forms.BooleanField(
        label=gettext_lazy("Email each new ticket to its holder"), required=False
    )

    def clean_file(self):
        """Refuse a file over IMPORT_MAX_UPLOAD_BYTES by its size, before reading it: a
        preview reads it whole, and larger files belong to `import_tickets`."""
        upload = self.cleaned_data["file"]
        limit = settings.IMPORT_MAX_UPLOAD_BYTES
        if upload.size > limit:
            raise ValidationError(
                _(
                    "The file is %(size)s; this page takes files up to %(limit)s. "
                    "Import a larger file with manage.py import_tickets."
                ),
                code="too_large",
                params={"size": filesizeformat(upload.size), "limit": filesizeformat(limit)},
            )
        return upload


class ConfirmForm(forms.Form):
    upload = forms.CharField(widget=forms.HiddenInput, max_length=1000)


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
            "max_upload_bytes": settings.IMPORT_MAX_UPLOAD_BYTES,
        }
        if request.method == "POST" and "confirm" in request.POST:
            return self._confirm(request, event, ConfirmForm(request.POST))
        if request.method == "POST":
            form = UploadForm(request.POST, request.FILES)
            context["form"] = form
            if form.is_valid():
                context.update(self._preview(request, event, form))
        return TemplateResponse(request, "admin/tickets/ticket/import.html", context)

    def _preview(self, request, event, form) -> dict:
        data = form.cleaned_data["file"].read()
        try:
            text = upload_decoded(data)
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
        signed_id = import_upload_keep(
            event=event, user=request.user, data=data, notify=form.cleaned_data["notify"]
        )
        confirm = ConfirmForm(initial={"upload": signed_id})
        return {"report": report, "confirm_form": confirm, "preview_rows": REPORT_ROWS}

    def _confirm(self, request, event, form):
        try:
            if not form.is_valid():
                raise UploadGone
            data, notify = import_upload_take(
                signed_id=form.cleaned_data["upload"], event=event, user=request.user
            )
            report = tickets_import_text(
                event=event,
                text=upload_decoded(data),
                user=request.user,
                notify=notify,
                dry_run=False,
            )
        except (UploadGone, CsvUnreadable, ApplicationError) as exc:
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
