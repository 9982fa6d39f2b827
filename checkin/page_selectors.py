"""What the check-in page reads for a signed-in user: the events of the organizers they belong
to, and who admitted a ticket that is already used."""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet
from django.utils import timezone

from events.models import CheckInType, Event
from organizers.permissions import user_is_member

from .models import CheckInLog


def events_for_check_in(*, organizer_ids: list[int]) -> QuerySet[Event]:
    """Active events not yet over, soonest first, with their organizer and check-in types.

    Only these admit anyone (CONTRACT §7: a draft event is refused, an ended one too); three
    queries whatever their number.
    """
    return (
        Event.objects.filter(
            organizer_id__in=organizer_ids, status=Event.Status.ACTIVE, end_at__gt=timezone.now()
        )
        .select_related("organizer")
        .prefetch_related(
            Prefetch("check_in_types", queryset=CheckInType.objects.order_by("position", "id"))
        )
        .order_by("start_at", "id")
    )


def last_check_in(
    *, user_id: int, event_id: int, ticket_id: int, check_in_type_id: int | None = None
) -> dict | None:
    """Who last checked the ticket in and when, for a member of the event's organizer; None
    otherwise (another organizer's ticket is not revealed). Two queries.

    The API's rejection carries the ticket (so the time), not who admitted it; the gate's
    audit row does (CONTRACT §7).
    """
    log = (
        CheckInLog.objects.filter(
            ticket_id=ticket_id,
            ticket__event_id=event_id,
            action=CheckInLog.Action.CHECK_IN,
            error__isnull=True,
            **({"check_in_type_id": check_in_type_id} if check_in_type_id else {}),
        )
        .select_related("ticket__event", "actor_user", "actor_application", "check_in_type")
        .order_by("-created_at", "-id")
        .first()
    )
    if log is None:
        return None
    if not user_is_member(user_id=user_id, organizer_id=log.ticket.event.organizer_id):
        return None
    by = str(log.actor_user) if log.actor_user else None
    if log.actor_application is not None:
        by = f"{by}, {log.actor_application.name}" if by else log.actor_application.name
    return {"at": log.at, "by": by}
