"""What an imported row's cells are checked against before its batch: the event's ticket types,
named by id or by name, and the rejection of a row, with its reason as staff read it."""

from __future__ import annotations

from django.utils.translation import gettext as _

from events.models import Event, TicketType


class RowRejected(Exception):
    """The row is not imported; the message says why (the report's and the command's line)."""


class TicketTypes:
    """Resolve the `ticket_type` cell: an id of this event's ticket type, or its name."""

    def __init__(self, event: Event):
        self.by_id: dict[int, TicketType] = {}
        self.by_name: dict[str, list[TicketType]] = {}
        for ticket_type in TicketType.objects.filter(event=event):
            self.by_id[ticket_type.pk] = ticket_type
            self.by_name.setdefault(ticket_type.name.strip().casefold(), []).append(ticket_type)

    def resolve(self, value: str) -> TicketType:
        value = value.strip()
        if not value:
            raise RowRejected(_("ticket_type is empty"))
        if value.isascii() and value.isdigit() and int(value) in self.by_id:
            return self.by_id[int(value)]
        matches = self.by_name.get(value.casefold(), [])
        if len(matches) == 1:
            return matches[0]
        if matches:
            ids = ", ".join(str(t.pk) for t in matches)
            raise RowRejected(
                _("ticket type name '%(name)s' is ambiguous (ids %(ids)s); use the id")
                % {"name": value, "ids": ids}
            )
        raise RowRejected(_("no ticket type '%(name)s' in this event") % {"name": value})
