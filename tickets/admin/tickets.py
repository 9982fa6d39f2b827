"""The ticket admin: staff see their organizers' tickets and operate them (revoke, resend the
email; `checkin.admin.tickets` adds check-in and undo, and the check-in history) through the same
services as the API."""

from django.contrib import admin, messages
from django.contrib.admin.views.main import SEARCH_VAR
from django.db.models import F, Q
from django.utils.text import smart_split, unescape_string_literal
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from events.admin import EventFilter
from events.models import TicketType
from organizers.admin_scoping import OrganizerScopedAdmin, ScopedRelatedFilter, person_with_account
from ticketing.api.exceptions import ApplicationError
from ticketing.api.fields import INT32_MAX
from ticketing.dates import admin_date

from ..exceptions import TicketAlreadyUsed
from ..filters import ticket_searched_text
from ..models import Ticket
from ..services.common import Actor
from ..services.emailing import ticket_email_resend
from ..services.revoking import ticket_revoke
from .email_status import email_delivery
from .forms import RevokeForm, TicketForm, TicketFormAnswerInline
from .imports import TicketImportMixin
from .ticket_tools import TicketPageToolsMixin

# One action runs one service call (one transaction) per ticket; a larger batch belongs in a
# management command, not in a request that holds a browser waiting.
MAX_ACTION_TICKETS = 500


class TicketTypeFilter(ScopedRelatedFilter):
    title = gettext_lazy("ticket type")
    parameter_name = "ticket_type_id"
    related_model = TicketType

    def choices_queryset(self, request, params):
        queryset = super().choices_queryset(request, params).select_related("event")
        event_id = (params.get("event_id") or [None])[-1]
        if event_id and event_id.isascii() and event_id.isdigit() and int(event_id) <= INT32_MAX:
            queryset = queryset.filter(event_id=int(event_id))
        return queryset.order_by("event_id", "position", "id")


def _local(value) -> str:
    """A time as the admin shows its date columns (`ticketing.admin_dates`).

    The services' messages carry ISO 8601 times, which are for API clients.
    """
    return admin_date(value)


def _search_terms(search_term: str) -> list[str]:
    """The terms of an admin search, split as `ModelAdmin.get_search_results` splits them."""
    terms = []
    for bit in smart_split(search_term):
        if bit.startswith(('"', "'")) and bit[0] == bit[-1]:
            bit = unescape_string_literal(bit)
        terms.append(bit)
    return terms


# Set by the services (check-in, revoke, creation), shown read-only.
_LIFECYCLE = [
    "used_at",
    "revoke_note",
    "external_id",
    "issued_via_api",
    "registered_at",
    "created_at",
    "updated_at",
]


@admin.register(Ticket)
class TicketAdmin(TicketPageToolsMixin, TicketImportMixin, OrganizerScopedAdmin):
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
        "used_at",
    ]
    list_select_related = ["event", "ticket_type"]
    list_filter = ["status", "kind", EventFilter, TicketTypeFilter]
    search_fields = ["=reference_code", "=nfc_uid", "email", "firstname", "lastname"]
    search_help_text = gettext_lazy("Reference code or NFC UID (exact), email or name (contains).")
    ordering = ["-id"]
    list_per_page = 50
    show_full_result_count = False
    inlines = [TicketFormAnswerInline]
    actions = ["revoke", "resend_email", "export_csv", "export_xlsx"]
    fieldsets = [
        (None, {"fields": ["reference_code", "event", "ticket_type", "order", "status", "kind"]}),
        (
            gettext_lazy("Holder"),
            {"fields": ["firstname", "lastname", "email", "phone", "holder", "nfc_uid"]},
        ),
        (gettext_lazy("Ticket page"), {"fields": ["page_link"]}),
        (gettext_lazy("Ticket email"), {"fields": ["email_delivery"]}),
        (gettext_lazy("Lifecycle"), {"fields": _LIFECYCLE}),
    ]
    readonly_fields = [
        "reference_code",
        "event",
        "ticket_type",
        "order",
        "status",
        "kind",
        "holder",
        "page_link",
        "email_delivery",
        *_LIFECYCLE,
    ]

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .select_related("event", "ticket_type__event", "order", "holder", "email_status")
        )

    def get_search_results(self, request, queryset, search_term):
        queryset, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        # Each term matches a field of the joined text that the tickets' one trigram index holds
        # (tickets.0007), or the tag: saying so lets PostgreSQL find the candidates in that
        # index and the tag's, then recheck the fields' own conditions on them.
        for term in _search_terms(search_term):
            queryset = queryset.alias(_searched_text=ticket_searched_text()).filter(
                Q(_searched_text__icontains=term) | Q(nfc_uid__iexact=term)
            )
        return queryset, may_have_duplicates

    def get_ordering(self, request):
        # A search is answered from trigram indexes (tickets.0007); sorted by bare `-id`, a page
        # of it tempts PostgreSQL to walk the primary key hoping to meet matches early, which
        # reads every ticket when they are rare. `id + 0` is the same order, found then sorted.
        if request.GET.get(SEARCH_VAR, "").strip():
            return [(F("id") + 0).desc()]
        return super().get_ordering(request)

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    # Not named `holder`: the admin would show the model field of that name (the account).
    @admin.display(description=gettext_lazy("holder"), ordering="lastname")
    def holder_with_account(self, obj):
        return person_with_account(obj.holder_name, obj.holder)

    @admin.display(description=gettext_lazy("Delivery"))
    def email_delivery(self, obj):
        return email_delivery(obj)

    @admin.display(description=gettext_lazy("ticket type"), ordering="ticket_type__name")
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
                _("Select at most %(count)d tickets per action.") % {"count": MAX_ACTION_TICKETS},
                messages.ERROR,
            )
            return None
        return tickets

    def _each(
        self,
        request,
        tickets,
        operation,
        done_message,
        *,
        when_used=None,
    ) -> None:
        """Apply `operation` (a service call) to each ticket and report the outcome;
        `done_message(n)` says that n were done.

        A used ticket is described by `when_used(time)` with its local check-in time.
        """

        def explain(exc: ApplicationError) -> str | None:
            if isinstance(exc, TicketAlreadyUsed):
                time = _local(exc.ticket.used_at)
                if when_used is None:
                    return _("already checked in at %(time)s") % {"time": time}
                return when_used(time)
            return None

        self.apply_each(
            request,
            tickets,
            operation,
            done_message=done_message,
            label=lambda ticket: ticket.reference_code,
            explain=explain,
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

    @admin.action(description=gettext_lazy("Revoke (with a note)…"), permissions=["operate"])
    def revoke(self, request, queryset):
        tickets = self._selected(request, queryset)
        if tickets is None:
            return None
        form = RevokeForm(request.POST if "apply" in request.POST else None)
        if not form.is_bound or not form.is_valid():
            return self._ticket_page(
                request,
                action="revoke",
                title=_("Revoke tickets"),
                form=form,
                tickets=tickets,
                button=_("Revoke"),
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
            lambda n: ngettext("Revoked %d ticket.", "Revoked %d tickets.", n) % n,
            when_used=lambda time: (
                _("checked in at %(time)s; undo the check-in before revoking") % {"time": time}
            ),
        )
        return None

    @admin.action(description=gettext_lazy("Resend ticket email"), permissions=["operate"])
    def resend_email(self, request, queryset):
        tickets = self._selected(request, queryset)
        if tickets is None:
            return
        self._each(
            request,
            tickets,
            lambda ticket: ticket_email_resend(ticket=ticket),
            lambda n: (
                ngettext(
                    "Queued the ticket email of %d ticket.",
                    "Queued the ticket emails of %d tickets.",
                    n,
                )
                % n
            ),
        )
