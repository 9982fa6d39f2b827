"""Reads of webhook endpoints, always within one organizer."""

from django.db.models import QuerySet

from ticketing.api.exceptions import NotFound
from ticketing.api.fields import INT32_MAX

from .models import WebhookEndpoint


def webhook_endpoints_for_organizer(*, organizer_id: int) -> QuerySet[WebhookEndpoint]:
    """The organizer's endpoints, oldest first."""
    return WebhookEndpoint.objects.filter(organizer_id=organizer_id).order_by("id")


def webhook_endpoint_get(*, organizer_id: int, endpoint_id: int) -> WebhookEndpoint:
    """Raises: NotFound, also for an endpoint of another organizer."""
    if not 1 <= endpoint_id <= INT32_MAX:
        raise NotFound("Webhook not found.")
    endpoint = webhook_endpoints_for_organizer(organizer_id=organizer_id).filter(pk=endpoint_id)
    found = endpoint.first()
    if found is None:
        raise NotFound("Webhook not found.")
    return found


def webhook_types_wanted(*, organizer_id: int) -> frozenset[str]:
    """The event types some active endpoint of the organizer wants (`*` for all), read now,
    never from a cache: a change made in the transaction of this read, so committed after an
    endpoint subscribed, has its event. (The statements that change a ticket in one round trip
    ask it in SQL instead, `statements.event_insert_sql`.)"""
    subscriptions = WebhookEndpoint.objects.filter(organizer_id=organizer_id, is_active=True)
    return frozenset(
        t
        for event_types in subscriptions.values_list("event_types", flat=True)
        for t in event_types
    )


def webhook_wants(*, organizer_id: int, type: str) -> bool:
    """Whether some active endpoint of the organizer wants `type` (`webhook_types_wanted`)."""
    types = webhook_types_wanted(organizer_id=organizer_id)
    return "*" in types or type in types
