"""Writes on events and ticket types that the admin and the operators' commands share."""

from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from .exceptions import CapacityBelowSold, EventStatusConflict
from .models import Event, TicketType

# Settings an organizer may change; the counters (`sold_count`, `api_sold_count`) are only
# moved by `ticket_type_claim_places` and `ticket_type_release_places`.
TICKET_TYPE_SETTINGS = frozenset(
    {"name", "price", "kind", "pack_size", "quantity", "api_quota", "status", "position"}
)


def ticket_type_check_capacity(
    *, ticket_type: TicketType, quantity: int | None, api_quota: int | None
) -> None:
    """Check new limits against the ticket type's counters as loaded.

    Revoked tickets free their place, so only non-revoked tickets count (the counters).

    Raises: CapacityBelowSold.
    """
    fields: dict[str, list[str]] = {}
    if quantity is not None and quantity < ticket_type.sold_count:
        fields["quantity"] = [
            f"Quantity cannot be lower than the {ticket_type.sold_count} tickets already sold "
            f"of '{ticket_type.name}'. Revoke tickets first to lower it."
        ]
    if api_quota is not None and api_quota < ticket_type.api_sold_count:
        fields["api_quota"] = [
            f"API quota cannot be lower than the {ticket_type.api_sold_count} tickets already "
            f"issued through the API for '{ticket_type.name}'."
        ]
    if fields:
        raise CapacityBelowSold(fields)


def ticket_type_claim_places(*, ticket_type_id: int, count: int = 1, via_api: bool) -> bool:
    """Take `count` places of a ticket type if it has them; False (and nothing taken) if not.

    One conditional UPDATE: the row lock it takes serialises concurrent sales, and its WHERE
    clause is the capacity rule, so two sales cannot both take the last place. Tickets issued
    through the API (`via_api`) also count against `api_quota`. The counters' check
    constraints are the backstop.

    Locks: the ticket type row, until the caller's transaction commits.
    """
    room = Q(sold_count__lte=F("quantity") - count)
    counters = {"sold_count": F("sold_count") + count}
    if via_api:
        room &= Q(api_quota__isnull=True) | Q(api_sold_count__lte=F("api_quota") - count)
        counters["api_sold_count"] = F("api_sold_count") + count
    return bool(TicketType.objects.filter(room, pk=ticket_type_id).update(**counters))


def ticket_type_claim_sql(*, name: str) -> str:
    """`ticket_type_claim_places` of one place as a clause of a WITH (`{name} AS (UPDATE ...
    RETURNING *)`: the type's row as claimed, or no row), for a statement that issues in one
    round trip; parameters `ticket_type_id`, `event_id`, `organizer_id`, `via_api` and `now`.
    The same rule, held to the ORM's by tests/write_api/test_issue_statement.py, and only in the
    organizer's event while it is on sale (`Event.effective_status` active at `now`), so that
    the statement needs the event not read first."""
    table = TicketType._meta.db_table
    return f"""{name} AS (
  UPDATE {table} SET sold_count = sold_count + 1,
    api_sold_count = api_sold_count + CASE WHEN %(via_api)s THEN 1 ELSE 0 END
  WHERE id = %(ticket_type_id)s AND event_id = %(event_id)s AND sold_count <= quantity - 1
    AND (NOT %(via_api)s OR api_quota IS NULL OR api_sold_count <= api_quota - 1)
    AND EXISTS (
      SELECT 1 FROM {Event._meta.db_table} AS e
      WHERE e.id = %(event_id)s AND e.organizer_id = %(organizer_id)s
        AND e.status = '{Event.Status.ACTIVE}' AND e.end_at > %(now)s
    )
  RETURNING *
)"""


def ticket_type_places_left(ticket_type: TicketType) -> int:
    """The places a ticket type has left, as read (no lock): what a preview may count on."""
    return max(0, ticket_type.quantity - ticket_type.sold_count)


def ticket_type_claim_up_to(*, ticket_type_id: int, count: int) -> int:
    """Take up to `count` places (not through the API): all of them when there is room, else
    those left; how many were taken.

    Locks: the ticket type row, until the caller's transaction commits.
    """
    if ticket_type_claim_places(ticket_type_id=ticket_type_id, count=count, via_api=False):
        return count
    ticket_type = TicketType.objects.select_for_update(of=("self",)).get(pk=ticket_type_id)
    room = min(count, ticket_type_places_left(ticket_type))
    if room:
        ticket_type_claim_places(ticket_type_id=ticket_type_id, count=room, via_api=False)
    return room


def ticket_type_release_places(*, ticket_type_id: int, count: int, api_count: int = 0) -> None:
    """Give back places of revoked tickets, `api_count` of them issued through the API.

    Locks: the ticket type row, until the caller's transaction commits.
    """
    counters = {"sold_count": F("sold_count") - count}
    if api_count:
        counters["api_sold_count"] = F("api_sold_count") - api_count
    TicketType.objects.filter(pk=ticket_type_id).update(**counters)


def _check_settings(changes: dict[str, Any]) -> None:
    unknown = set(changes) - TICKET_TYPE_SETTINGS
    assert not unknown, f"not ticket type settings: {sorted(unknown)}"


@transaction.atomic
def ticket_type_create(*, event: Event, **settings: Any) -> TicketType:
    """Add a ticket type to an event; it starts with nothing sold."""
    _check_settings(settings)
    ticket_type = TicketType(event=event, **settings)
    ticket_type.full_clean(exclude=["event"])
    ticket_type.save()
    return ticket_type


@transaction.atomic
def ticket_type_update(*, ticket_type_id: int, **changes: Any) -> TicketType:
    """Change a ticket type's settings; its limits never go below what is already sold.

    Only the named settings are written, so a sale counted meanwhile is never overwritten.

    Locks: the ticket type row until commit, so a sale waits and then sees the new limits
    (the counters' check constraints are the backstop).
    Raises: TicketType.DoesNotExist, CapacityBelowSold.
    """
    _check_settings(changes)
    ticket_type = TicketType.objects.select_for_update(of=("self",)).get(pk=ticket_type_id)
    ticket_type_check_capacity(
        ticket_type=ticket_type,
        quantity=changes.get("quantity", ticket_type.quantity),
        api_quota=changes.get("api_quota", ticket_type.api_quota),
    )
    if not changes:
        return ticket_type
    for name, value in changes.items():
        setattr(ticket_type, name, value)
    ticket_type.save(update_fields=[*changes, "updated_at"])
    return ticket_type


@transaction.atomic
def event_publish(*, event_id: int) -> Event:
    """Put a draft event on sale (draft → active).

    Raises: EventStatusConflict when the event is not a draft.
    """
    changed = Event.objects.filter(pk=event_id, status=Event.Status.DRAFT).update(
        status=Event.Status.ACTIVE, updated_at=timezone.now()
    )
    event = Event.objects.get(pk=event_id)
    if not changed:
        raise EventStatusConflict(
            f"'{event.title}' is {event.get_status_display().lower()}, not a draft."
        )
    return event


@transaction.atomic
def event_end(*, event_id: int) -> Event:
    """End an active event now (active → ended): no more sales or check-ins.

    Raises: EventStatusConflict when the event is not active.
    """
    changed = Event.objects.filter(pk=event_id, status=Event.Status.ACTIVE).update(
        status=Event.Status.ENDED, updated_at=timezone.now()
    )
    event = Event.objects.get(pk=event_id)
    if not changed:
        raise EventStatusConflict(
            f"'{event.title}' is {event.get_status_display().lower()}, not active."
        )
    return event


def event_end_past(*, now: datetime | None = None) -> int:
    """Mark every active event whose end has passed as ended; returns how many changed.

    One conditional UPDATE, so it is idempotent and safe to run from cron, also twice at
    once: an event already ended no longer matches. Uses the same boundary as
    `Event.effective_status` (`end_at <= now`).
    """
    now = now or timezone.now()
    return Event.objects.filter(status=Event.Status.ACTIVE, end_at__lte=now).update(
        status=Event.Status.ENDED, updated_at=now
    )
