"""What the ticket use cases share: who acts, the locked read of a ticket, constraint names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db import IntegrityError
from django.db.models import Exists, OuterRef

from events.models import CheckInType, Event
from ticketing.api.exceptions import NotFound
from ticketing.api.fields import iso

from ..models import Ticket, TicketFormAnswer
from ..selectors import with_form_answers

__all__ = ["Actor", "iso", "ticket_lock", "violates"]  # `iso` for the services that format times

if TYPE_CHECKING:
    from accounts.models import User
    from oauth_setup.models import Application

_UNIQUE_CONSTRAINTS = {
    "external_id": "ticket_unique_external_id",
    "reference_code": "ticket_unique_reference_code",
    "nfc_uid": "ticket_unique_nfc_uid",
}


@dataclass(frozen=True)
class Actor:
    """Who did it; audit rows record both (a user token has both, an application token no user)."""

    user: User | None = None
    application: Application | None = None


def violates(exc: IntegrityError, field: str) -> bool:
    """Whether `exc` broke the unique constraint on `field` (PostgreSQL: name; SQLite: columns)."""
    diag = getattr(exc.__cause__, "diag", None)
    constraint = getattr(diag, "constraint_name", None)
    if constraint is not None:
        return constraint == _UNIQUE_CONSTRAINTS[field]
    return f"{Ticket._meta.db_table}.{field}" in str(exc)


def ticket_lock(*, event: Event, **filters) -> Ticket:
    """The event's ticket, locked until commit, with what the gate rules and the output read.

    Raises: NotFound.
    Locks: the ticket row (not its order or type: `of=self`).
    """
    ticket = (
        Ticket.objects.select_for_update(of=("self",))
        .select_related("order", "ticket_type")
        .annotate(
            event_has_check_in_types=Exists(
                CheckInType.objects.filter(event_id=OuterRef("event_id"))
            ),
            has_form_answers=Exists(TicketFormAnswer.objects.filter(ticket_id=OuterRef("pk"))),
        )
        .filter(event_id=event.pk, **filters)
        .first()
    )
    if ticket is None:
        raise NotFound("Ticket not found.")
    return with_form_answers(ticket, has_answers=ticket.has_form_answers)
