from django import forms
from django.contrib import admin, messages
from django.utils import formats, timezone
from django.utils.translation import ngettext

from events.models import CheckInType
from ticketing.admin_scoping import (
    EventFilter,
    FormAnswerInline,
    OrganizerScopedAdmin,
    ReadOnlyInline,
    ScopedRelatedFilter,
    person_with_account,
)
from ticketing.api.exceptions import ApplicationError

from .exceptions import TicketAlreadyUsed
from .models import CheckInLog, Ticket, TicketCheckIn, TicketFormAnswer
from .services import (
    Actor,
    GateResult,
    TypeResult,
    phone_to_e164,
    ticket_check_in,
    ticket_email_resend,
    ticket_renew,
    ticket_revoke,
)

# One action runs one service call (one transaction) per ticket; a larger batch belongs in a
# management command, not in a request that holds a browser waiting.
MAX_ACTION_TICKETS = 500


class TicketTypeFilter(ScopedRelatedFilter):
    title = "ticket type"
    parameter_name = "ticket_type_id"
    related_model_label = "events.TicketType"

    def choices_queryset(self, request, params):
        queryset = super().choices_queryset(request, params).select_related("event")
        event_id = (params.get("event_id") or [None])[-1]
        if event_id and event_id.isdigit() and int(event_id) < 2**31:
            queryset = queryset.filter(event_id=int(event_id))
        return queryset.order_by("event_id", "position", "id")


class CheckInLogInline(ReadOnlyInline, admin.TabularInline):
    """The ticket's check-in history, newest first."""

    model = CheckInLog
    parent_organizer_path = "event__organizer"
    verbose_name = "check-in history entry"
    verbose_name_plural = "check-in history"
    fields = [
        "action",
        "check_in_type_name",
        "at",
        "actor_user",
        "actor_application",
        "nfc_uid",
        "note",
        "created_at",
    ]
    readonly_fields = fields

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            # `ticket` too: the inline prints each row's str(), which names the ticket.
            .select_related("ticket", "check_in_type", "actor_user", "actor_application")
        )

    @admin.display(description="check-in type")
    def check_in_type_name(self, obj):
        return obj.check_in_type.name if obj.check_in_type_id else "—"


class TicketCheckInInline(ReadOnlyInline, admin.TabularInline):
    """Check-in types currently admitted on the ticket (events with check-in types)."""

    model = TicketCheckIn
    parent_organizer_path = "event__organizer"
    verbose_name = "admitted check-in type"
    verbose_name_plural = "admitted check-in types"
    fields = ["check_in_type_name", "used_at"]
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("ticket", "check_in_type")

    @admin.display(description="check-in type")
    def check_in_type_name(self, obj):
        return obj.check_in_type.name


class TicketFormAnswerInline(FormAnswerInline):
    model = TicketFormAnswer


class TicketForm(forms.ModelForm):
    """Holder details only: the lifecycle (status, check-ins, revocation) moves through the
    actions, which call the same services as the API."""

    class Meta:
        model = Ticket
        fields = ["firstname", "lastname", "email", "phone", "nfc_uid"]

    def clean_phone(self):
        phone = self.cleaned_data["phone"].strip()
        if not phone:
            return phone
        try:
            return phone_to_e164(phone)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_nfc_uid(self):
        nfc_uid = (self.cleaned_data.get("nfc_uid") or "").strip() or None
        if (
            nfc_uid is not None
            and Ticket.objects.filter(event_id=self.instance.event_id, nfc_uid=nfc_uid)
            .exclude(pk=self.instance.pk)
            .exists()
        ):
            raise forms.ValidationError("Another ticket of this event is bound to this NFC tag.")
        return nfc_uid


class ActionNoteForm(forms.Form):
    note = forms.CharField(
        label="Note",
        required=False,
        max_length=500,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
    )


class RevokeForm(forms.Form):
    reason = forms.CharField(
        label="Reason (stored as the ticket's revoke note)",
        required=False,
        max_length=500,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
    )


def _check_in_types_form(types_by_event: dict[int, list[CheckInType]], data=None) -> forms.Form:
    """One multiple-choice field per event that has check-in types."""
    form = ActionNoteForm(data)
    for event_id, types in types_by_event.items():
        form.fields[f"types_{event_id}"] = forms.TypedMultipleChoiceField(
            label=f"Check-in types — {types[0].event.title}",
            choices=[(t.pk, t.name) for t in types],
            coerce=int,
            required=False,
            widget=forms.CheckboxSelectMultiple,
        )
    return form


def _local(value) -> str:
    """A time as the admin shows its date columns: in the site's time zone, in words.

    The services' messages carry ISO 8601 times, which are for API clients.
    """
    return formats.localize(timezone.localtime(value))


def _gate_outcome(ticket: Ticket, result: GateResult) -> str | None:
    """None when every requested type succeeded, else why not (per type)."""
    if result.success:
        return None
    parts = [
        f"{r.check_in_type_name or r.check_in_type_id}: {_type_problem(r)}"
        for r in (*result.check_in_results, *result.renew_results)
        if not r.success
    ]
    return f"{ticket.reference_code}: " + ", ".join(parts)


def _type_problem(result: TypeResult) -> str:
    # A refused type carries a time only when it was already admitted, at that time.
    if result.used_at is not None:
        return f"already checked in at {_local(result.used_at)}"
    return result.error


@admin.register(Ticket)
class TicketAdmin(OrganizerScopedAdmin):
    allow_add = False  # tickets are issued by `ticket_create` (API, import_tickets), with quotas
    allow_delete = False  # revoke instead: it frees the place and keeps the record
    form = TicketForm
    list_display = [
        "reference_code",
        "holder_with_account",
        "email",
        "event",
        "ticket_type_name",
        "status",
        "kind",
        "used_at",
    ]
    list_select_related = ["event", "ticket_type"]
    list_filter = ["status", "kind", EventFilter, TicketTypeFilter]
    search_fields = ["=reference_code", "=nfc_uid", "email", "firstname", "lastname"]
    search_help_text = "Reference code or NFC UID (exact), email or name (contains)."
    ordering = ["-id"]
    list_per_page = 50
    show_full_result_count = False
    inlines = [TicketCheckInInline, CheckInLogInline, TicketFormAnswerInline]
    actions = ["check_in", "undo_check_in", "revoke", "resend_email"]
    fieldsets = [
        (None, {"fields": ["reference_code", "event", "ticket_type", "order", "status", "kind"]}),
        ("Holder", {"fields": ["firstname", "lastname", "email", "phone", "holder", "nfc_uid"]}),
        (
            "Lifecycle",
            {
                "fields": [
                    "used_at",
                    "revoke_note",
                    "external_id",
                    "issued_via_api",
                    "registered_at",
                    "created_at",
                    "updated_at",
                ]
            },
        ),
    ]
    readonly_fields = [
        "reference_code",
        "event",
        "ticket_type",
        "order",
        "status",
        "kind",
        "holder",
        "used_at",
        "revoke_note",
        "external_id",
        "issued_via_api",
        "registered_at",
        "created_at",
        "updated_at",
    ]

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .select_related("event", "ticket_type__event", "order", "holder")
        )

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    # Not named `holder`: the admin would show the model field of that name (the account).
    @admin.display(description="holder", ordering="lastname")
    def holder_with_account(self, obj):
        return person_with_account(obj.holder_name, obj.holder)

    @admin.display(description="ticket type", ordering="ticket_type__name")
    def ticket_type_name(self, obj):
        return obj.ticket_type.name

    def save_model(self, request, obj, form, change):
        # Write only what the form changed: a check-in committed by a gate while this page was
        # open must not be overwritten with the status the page loaded.
        if form.changed_data:
            obj.save(update_fields=[*form.changed_data, "updated_at"])

    # --- actions ------------------------------------------------------------------------------

    def _selected(self, request, queryset) -> list[Ticket] | None:
        tickets = list(queryset.select_related("event").order_by("pk")[: MAX_ACTION_TICKETS + 1])
        if len(tickets) > MAX_ACTION_TICKETS:
            self.message_user(
                request,
                f"Select at most {MAX_ACTION_TICKETS} tickets per action.",
                messages.ERROR,
            )
            return None
        return tickets

    def _each(
        self,
        request,
        tickets,
        operation,
        singular: str,
        plural: str,
        *,
        when_used: str = "already checked in at {time}",
    ) -> None:
        """Apply `operation` (a service call) to each ticket and report the outcome.

        The operation returns None on success or a sentence saying what did not happen; a
        service's rejection becomes that ticket's failure, with the service's own message,
        except that a used ticket is described by `when_used` with its local check-in time.
        """
        done, failures = 0, []
        for ticket in tickets:
            try:
                problem = operation(ticket)
            except TicketAlreadyUsed as exc:
                time = _local(exc.ticket.used_at)
                problem = f"{ticket.reference_code}: {when_used.format(time=time)}"
            except ApplicationError as exc:
                problem = f"{ticket.reference_code}: {exc.message}"
            if problem:
                failures.append(problem)
            else:
                done += 1
        self.report(
            request,
            done=done,
            done_message=ngettext(singular, plural, done) % done,
            failures=failures,
        )

    def _ticket_page(self, request, *, action, title, form, tickets, button):
        return self.action_page(
            request,
            action=action,
            title=title,
            form=form,
            objects=tickets,
            describe=lambda t: (
                f"{t.reference_code} — {t.holder_name} ({t.get_status_display()}, {t.event.title})"
            ),
            button=button,
        )

    @admin.action(description="Check in", permissions=["operate"])
    def check_in(self, request, queryset):
        tickets = self._selected(request, queryset)
        if tickets is None:
            return None
        types_by_event: dict[int, list[CheckInType]] = {}
        for check_in_type in CheckInType.objects.filter(
            event_id__in={t.event_id for t in tickets}
        ).select_related("event"):
            types_by_event.setdefault(check_in_type.event_id, []).append(check_in_type)
        form = _check_in_types_form(
            types_by_event, request.POST if "apply" in request.POST else None
        )
        # Events with check-in types need the user to say which gate this is.
        needs_input = types_by_event and not form.is_bound
        if needs_input or (form.is_bound and not form.is_valid()):
            return self._ticket_page(
                request,
                action="check_in",
                title="Check in tickets",
                form=form,
                tickets=tickets,
                button="Check in",
            )
        note = form.cleaned_data.get("note", "") if form.is_bound else ""
        actor = Actor(user=request.user)

        def check_in(ticket: Ticket) -> str | None:
            type_ids = (
                form.cleaned_data.get(f"types_{ticket.event_id}") or None
                if ticket.event_id in types_by_event
                else None
            )
            result = ticket_check_in(
                event=ticket.event,
                ticket_id=ticket.pk,
                actor=actor,
                check_in_type_ids=type_ids,
                note=note,
            )
            return _gate_outcome(ticket, result)

        self._each(request, tickets, check_in, "Checked in %d ticket.", "Checked in %d tickets.")
        return None

    @admin.action(description="Undo check-in", permissions=["operate"])
    def undo_check_in(self, request, queryset):
        tickets = self._selected(request, queryset)
        if tickets is None:
            return
        actor = Actor(user=request.user)

        def undo(ticket: Ticket) -> str | None:
            result = ticket_renew(event=ticket.event, ticket_id=ticket.pk, actor=actor)
            return _gate_outcome(ticket, result)

        self._each(
            request,
            tickets,
            undo,
            "Undid the check-in of %d ticket.",
            "Undid the check-in of %d tickets.",
        )

    @admin.action(description="Revoke (with a note)…", permissions=["operate"])
    def revoke(self, request, queryset):
        tickets = self._selected(request, queryset)
        if tickets is None:
            return None
        form = RevokeForm(request.POST if "apply" in request.POST else None)
        if not form.is_bound or not form.is_valid():
            return self._ticket_page(
                request,
                action="revoke",
                title="Revoke tickets",
                form=form,
                tickets=tickets,
                button="Revoke",
            )
        actor = Actor(user=request.user)

        def revoke(ticket: Ticket) -> None:
            ticket_revoke(
                event=ticket.event,
                ticket_id=ticket.pk,
                reason=form.cleaned_data["reason"],
                actor=actor,
            )

        self._each(
            request,
            tickets,
            revoke,
            "Revoked %d ticket.",
            "Revoked %d tickets.",
            when_used="checked in at {time}; undo the check-in before revoking",
        )
        return None

    @admin.action(description="Resend ticket email", permissions=["operate"])
    def resend_email(self, request, queryset):
        tickets = self._selected(request, queryset)
        if tickets is None:
            return
        self._each(
            request,
            tickets,
            lambda ticket: ticket_email_resend(ticket=ticket),
            "Queued the ticket email of %d ticket.",
            "Queued the ticket emails of %d tickets.",
        )


class LogEventFilter(EventFilter):
    field_path = "ticket__event_id"


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
        "check_in_type_name",
        "at",
        "actor_user",
        "actor_application",
        "nfc_uid",
        "note",
    ]
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
