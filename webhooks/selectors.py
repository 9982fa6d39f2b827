"""Reads of webhook endpoints, always within one organizer."""

import time

from django.conf import settings
from django.db import transaction
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


# Per process: organizer id -> (monotonic expiry, the event types its active endpoints want).
_subscribed: dict[int, tuple[float, frozenset[str]]] = {}


def webhook_subscriptions_changed(*, organizer_id: int) -> None:
    """Forget what this process remembers of the organizer's subscriptions: now, so that the
    changing transaction reads its own endpoints, and again at commit, so that no answer read
    before the change was visible is kept. Other processes see it within
    `WEBHOOK_SUBSCRIPTION_CACHE_SECONDS`."""

    def forget() -> None:
        _subscribed.pop(organizer_id, None)

    forget()
    transaction.on_commit(forget)


def webhook_types_subscribed(*, organizer_id: int) -> frozenset[str]:
    """The event types some active endpoint of the organizer wants (`*` for all).

    Read on every check-in, so each process keeps the answer for
    `WEBHOOK_SUBSCRIPTION_CACHE_SECONDS`: no Redis round trip on the gate's path (an API request
    makes one, for its token and rate limit), one query per organizer and process at most that
    often. The price: a new endpoint hears of other processes' changes that many seconds late.
    """
    now = time.monotonic()
    remembered = _subscribed.get(organizer_id)
    if remembered is not None and remembered[0] > now:
        return remembered[1]
    types = frozenset(
        t
        for event_types in WebhookEndpoint.objects.filter(
            organizer_id=organizer_id, is_active=True
        ).values_list("event_types", flat=True)
        for t in event_types
    )
    seconds = settings.WEBHOOK_SUBSCRIPTION_CACHE_SECONDS
    if seconds:
        _subscribed[organizer_id] = (now + seconds, types)
    return types


def webhook_wants(*, organizer_id: int, type: str) -> bool:
    """Whether some active endpoint of the organizer may want `type` (from the cache, usually:
    the gate asks it to decide whether its one statement also records the event)."""
    types = webhook_types_subscribed(organizer_id=organizer_id)
    return "*" in types or type in types
