"""The body of a webhook event (CONTRACT §13), as the ORM records it (`services`); a change's
own statement builds the same body in SQL (`statements.event_insert_sql`), held to this one by
tests/webhooks/test_statements.py."""

from datetime import datetime

from ticketing.api.fields import datetime_representation

from .models import WebhookEvent

# The types a change records; a `ping` is sent only by `webhook_endpoint_ping`, to one endpoint,
# so a subscription to it (allowed, as to any type) brings nothing else.
EVENT_TYPES = [t for t in WebhookEvent.Type.values if t != WebhookEvent.Type.PING]


def event_envelope(
    *, id: str, type: str, created_at: datetime, organizer_id: int, event_id: int | None, data
) -> dict:
    return {
        "id": id,
        "type": type,
        "created_at": datetime_representation(created_at),
        "organizer_id": organizer_id,
        "event_id": event_id,
        "data": data,
    }
