"""Attendee import in the admin: upload a CSV file or an Excel workbook, see what would be
created and every rejected line, then confirm (`tickets.services.import_upload`: the row
service of `import_tickets`, so the admin and the command accept and reject exactly the same
rows). The file stays on the server between the two; the confirmation posts only the signed
id naming it, and the confirmed run reads the file again and checks every row again. A file of
more than INLINE_ROWS rows is previewed and imported by a worker
(`tickets.services.import_jobs`) while the page shows a progress bar, reloading itself each
second (no script: the admin's CSP stays as it is).
"""

from __future__ import annotations

from urllib.parse import urlencode

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

from ..services.csv_input import FileUnreadable
from ..services.import_files import import_format
from ..services.import_jobs import INLINE_ROWS, import_job_start, import_job_status
from ..services.import_upload import (
    REPORT_ROWS,
    UploadGone,
    import_upload_claim,
    import_upload_keep,
    import_upload_take,
    tickets_import_file,
    upload_rows,
)
from .ticket_tools import event_id_param

TEMPLATE = "admin/tickets/ticket/import.html"
REPORT_COUNTS = ("created", "existing", "rejected")


class UploadForm(forms.Form):
    file = forms.FileField(
        label=gettext_lazy("CSV or Excel file"),
        widget=forms.ClearableFileInput(attrs={"accept": ".csv,.xlsx"}),
    )
    notify = forms.BooleanField(
        label=gettext_lazy("Email each new ticket to its holder"), required=False
    )

    def clean_file(self):
        """Refuse a file of another format by its name, and one over IMPORT_MAX_UPLOAD_BYTES
        by its size, before reading it: a preview reads it whole."""
        upload = self.cleaned_data["file"]
        try:
            import_format(upload.name)
        except FileUnreadable as exc:
            raise ValidationError(exc.message, code="format") from None
        limit = settings.IMPORT_MAX_UPLOAD_BYTES
        if upload.size > limit:
            raise ValidationError(
                _(
                    "The file is %(size)s; this page takes files up to %(limit)s. Split it "
                    "into smaller files and import each."
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
        if request.method == "GET" and "job" in request.GET:
            return self._job(request, event, context, request.GET["job"])
        if request.method == "POST" and "confirm" in request.POST:
            return self._confirm(request, event, ConfirmForm(request.POST))
        if request.method == "POST":
            form = UploadForm(request.POST, request.FILES)
            context["form"] = form
            if form.is_valid():
                update = self._preview(request, event, form)
                if not isinstance(update, dict):
                    return update  # a large file: to its job's page
                context.update(update)
        return TemplateResponse(request, TEMPLATE, context)

    def _preview(self, request, event, form):
        upload = form.cleaned_data["file"]
        data, file_format = upload.read(), import_format(upload.name)
        notify = form.cleaned_data["notify"]
        kept = {"event": event, "user": request.user, "data": data, "notify": notify}
        kept["file_format"] = file_format
        try:
            rows = upload_rows(data, file_format)
            if rows > INLINE_ROWS:
                upload = import_upload_keep(**kept, rows=rows)
                job = import_job_start(
                    event=event, user=request.user, upload=upload, rows=rows, confirm=False
                )
                return redirect(_page(event, job=job))
            report = tickets_import_file(
                event=event,
                data=data,
                file_format=file_format,
                user=request.user,
                notify=notify,
                dry_run=True,
            )
        except FileUnreadable as exc:
            form.add_error("file", _unreadable(exc))
            return {}
        except ApplicationError as exc:
            form.add_error(None, exc.message)
            return {}
        signed_id = import_upload_keep(**kept, rows=rows)
        confirm = ConfirmForm(initial={"upload": signed_id})
        return {"report": report, "confirm_form": confirm, "preview_rows": REPORT_ROWS}

    def _confirm(self, request, event, form):
        try:
            if not form.is_valid():
                raise UploadGone
            signed_id = form.cleaned_data["upload"]
            claim = import_upload_claim(signed_id=signed_id, event=event, user=request.user)
            if claim.get("rows", 0) > INLINE_ROWS:
                job = import_job_start(
                    event=event,
                    user=request.user,
                    upload=signed_id,
                    rows=claim["rows"],
                    confirm=True,
                )
                return redirect(_page(event, job=job))
            kept = import_upload_take(signed_id=signed_id, event=event, user=request.user)
            report = tickets_import_file(
                event=event,
                data=kept.data,
                file_format=kept.file_format,
                user=request.user,
                notify=kept.notify,
                dry_run=False,
            )
        except FileUnreadable as exc:
            self.message_user(request, _unreadable(exc), level="error")
            return redirect(_page(event))
        except (UploadGone, ApplicationError) as exc:
            self.message_user(request, exc.message, level="error")
            return redirect(_page(event))
        return self._imported(request, event, report.created, report.existing, report.rejected)

    def _imported(self, request, event, created: int, existing: int, rejected: int):
        self.message_user(
            request,
            ngettext(
                "Imported %(created)d ticket (%(existing)d already imported, %(rejected)d "
                "rejected).",
                "Imported %(created)d tickets (%(existing)d already imported, %(rejected)d "
                "rejected).",
                created,
            )
            % {"created": created, "existing": existing, "rejected": rejected},
        )
        return redirect(reverse("admin:tickets_ticket_changelist") + f"?event_id={event.pk}")

    def _job(self, request, event, context, job_id: str):
        """A job's page: its progress bar (the page reloads itself) until it is done, then the
        preview with its Import button, or the import's outcome on the ticket list."""
        try:
            status = import_job_status(job_id=job_id, event=event, user=request.user)
        except UploadGone as exc:
            self.message_user(request, exc.message, level="error")
            return redirect(_page(event))
        report = status.report
        if status.state == "failed" or (report is not None and report["error"]):
            error = report["error"] if report else _("The import failed; see the worker's log.")
            self.message_user(request, error, level="error")
            return redirect(_page(event))
        if report is not None and status.confirm:
            return self._imported(request, event, *(report[k] for k in REPORT_COUNTS))
        if report is not None:
            context["report"] = report
            context["confirm_form"] = ConfirmForm(initial={"upload": status.upload})
            context["preview_rows"] = REPORT_ROWS
        else:
            context["job"] = status
        return TemplateResponse(request, TEMPLATE, context)


def _unreadable(exc: FileUnreadable) -> str:
    """Why the file cannot be imported, with what staff can do about a CSV file's encoding."""
    if exc.code == "encoding":
        return (
            exc.message
            + " "
            + _("Save it from Excel as CSV UTF-8 (.csv), or upload the workbook (.xlsx) itself.")
        )
    return exc.message


def _page(event, **params) -> str:
    """The import page of `event`, with `params` (a job's id) in its query."""
    return (
        reverse("admin:tickets_ticket_import") + "?" + urlencode({"event_id": event.pk, **params})
    )
