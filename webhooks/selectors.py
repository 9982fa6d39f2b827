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
