"""The ticket admin with the gate's actions: staff check tickets in and undo check-ins through the
same services as the API, and see the ticket's admitted check-in types and check-in history. It
replaces the tickets app's page for `Ticket`, which it extends."""

from django.contrib import admin
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from events.models import CheckInType
from tickets.admin.forms import check_in_types_form
from tickets.admin.tickets import TicketAdmin as TicketAdminBase
from tickets.admin.tickets import _local
from tickets.models import Ticket
from tickets.services.common import Actor

from ..gate_types import GateResult, TypeResult
from ..services.gate import ticket_check_in, ticket_renew
from .inlines import CheckInLogInline, TicketCheckInInline


def _gate_outcome(result: GateResult) -> str | None:
    """None when every requested type succeeded, else why not (per type)."""
    if result.success:
        return None
    return ", ".join(
        f"{r.check_in_type_name or r.check_in_type_id}: {_type_problem(r)}"
        for r in (*result.check_in_results, *result.renew_results)
        if not r.success
    )


def _type_problem(result: TypeResult) -> str:
    # A refused type carries a time only when it was already admitted, at that time.
    if result.used_at is not None:
        return _("already checked in at %(time)s") % {"time": _local(result.used_at)}
    return result.error


admin.site.unregister(Ticket)


@admin.register(Ticket)
class TicketAdmin(TicketAdminBase):
    actions = ["check_in", "undo_check_in", *TicketAdminBase.actions]
    inlines = [TicketCheckInInline, CheckInLogInline, *TicketAdminBase.inlines]

    @admin.action(description=gettext_lazy("Check in"), permissions=["operate"])
    def check_in(self, request, queryset):
        tickets = self._selected(request, queryset)
        if tickets is None:
            return None
        types_by_event: dict[int, list[CheckInType]] = {}
        for check_in_type in CheckInType.objects.filter(
            event_id__in={t.event_id for t in tickets}
        ).select_related("event"):
            types_by_event.setdefault(check_in_type.event_id, []).append(check_in_type)
        form = check_in_types_form(
            types_by_event, request.POST if "apply" in request.POST else None
        )
        # Events with check-in types need the user to say which gate this is.
        needs_input = types_by_event and not form.is_bound
        if needs_input or (form.is_bound and not form.is_valid()):
            return self._ticket_page(
                request,
                action="check_in",
                title=_("Check in tickets"),
                form=form,
                tickets=tickets,
                button=_("Check in"),
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
            return _gate_outcome(result)

        self._each(
            request,
            tickets,
            check_in,
            lambda n: ngettext("Checked in %d ticket.", "Checked in %d tickets.", n) % n,
        )
        return None

    @admin.action(description=gettext_lazy("Undo check-in"), permissions=["operate"])
    def undo_check_in(self, request, queryset):
        tickets = self._selected(request, queryset)
        if tickets is None:
            return
        actor = Actor(user=request.user)

        def undo(ticket: Ticket) -> str | None:
            result = ticket_renew(event=ticket.event, ticket_id=ticket.pk, actor=actor)
            return _gate_outcome(result)

        self._each(
            request,
            tickets,
            undo,
            lambda n: (
                ngettext("Undid the check-in of %d ticket.", "Undid the check-in of %d tickets.", n)
                % n
            ),
        )
