"""The webhooks this API sends (CONTRACT §13), in its OpenAPI document.

The document stays OpenAPI 3.0, whose `nullable` its tests (openapi-core, schemathesis) read;
3.0 has no `webhooks`. So each event is described as 3.1 would, under `x-webhooks` (which Redoc
renders): a POST to the receiver with its signature headers (parameter components) and its body,
a `WebhookEvent` component of one schema per type that generated clients type. The overview,
with the retry schedule read from the settings, is a section of the document's description,
which Swagger UI shows.
"""

import copy
import itertools
import re

from django.conf import settings

SCHEMA = "#/components/schemas/"
PARAMETER = "#/components/parameters/"

# What each type's `data` holds, and when the type is sent: a new event type needs both here
# (the hook fails on a type it does not know).
_TICKET_DATA = "TicketWebhookData"
_DATA_OF_TYPE = {
    "ticket.created": _TICKET_DATA,
    "ticket.checked_in": _TICKET_DATA,
    "ticket.renewed": _TICKET_DATA,
    "ticket.revoked": _TICKET_DATA,
    "order.cancelled": "OrderWebhookData",
    "ping": "PingWebhookData",
}
_WHEN = {
    "ticket.created": "A ticket was issued, through the API or by an import.",
    "ticket.checked_in": "A ticket was checked in: the whole ticket, or one or more of its "
    "check-in types.",
    "ticket.renewed": "A check-in was undone (renew): the whole ticket, or some of its check-in "
    "types.",
    "ticket.revoked": "A ticket was revoked (invalidated, or its order cancelled); this is final.",
    "order.cancelled": "An order was cancelled; a `ticket.revoked` follows for each ticket the "
    "cancellation revoked.",
    "ping": "Sent by `POST /organizers/{organizer_id}/webhooks/{webhook_id}/test` to that "
    "endpoint only, also when the endpoint is disabled: a way to check a receiver.",
}
_DATA = {
    _TICKET_DATA: {
        "type": "object",
        "required": ["ticket"],
        "properties": {"ticket": {"$ref": f"{SCHEMA}Ticket"}},
        "description": "The ticket after the change, as the API returns it.",
    },
    "OrderWebhookData": {
        "type": "object",
        "required": ["order"],
        "properties": {"order": {"$ref": f"{SCHEMA}Order"}},
        "description": "The order after the change, as the API returns it.",
    },
    "PingWebhookData": {
        "type": "object",
        "required": ["webhook"],
        "properties": {
            "webhook": {
                "type": "object",
                "required": ["id", "url"],
                "properties": {"id": {"type": "integer"}, "url": {"type": "string"}},
                "description": "The endpoint pinged.",
            }
        },
    },
}
_HEADERS = {
    "WebhookId": {
        "name": "webhook-id",
        "schema": {"type": "string", "pattern": "^evt_[0-9a-f]{32}$"},
        "description": "The event's id, also the body's `id`: the same on every attempt of the "
        "event, so a receiver deduplicates by it.",
    },
    "WebhookTimestamp": {
        "name": "webhook-timestamp",
        "schema": {"type": "string", "pattern": "^[0-9]{1,12}$"},
        "description": "When this attempt was signed, in Unix seconds. Reject one far from "
        "your clock (Standard Webhooks libraries allow 5 minutes): it guards against replays.",
    },
    "WebhookSignature": {
        "name": "webhook-signature",
        "schema": {
            "type": "string",
            "pattern": "^v1,[A-Za-z0-9+/]+={0,2}( v1,[A-Za-z0-9+/]+={0,2})*$",
        },
        "description": "`v1,<signature>`, space-separated if several: the base64 of the "
        "HMAC-SHA256, keyed with the endpoint's secret (the bytes of the base64 after `whsec_`), "
        'of "{webhook-id}.{webhook-timestamp}.{body}". Any Standard Webhooks library verifies '
        "it; compare in constant time.",
    },
}


def webhooks_described(result: dict, **kwargs) -> dict:
    """Postprocessing hook: the webhook components, `x-webhooks`, and the description's section
    on webhooks (after the enum hook, which would rename these enums; before the int32 one)."""
    from .models import WebhookEvent

    types = WebhookEvent.Type.values
    schemas = result["components"]["schemas"]
    assert {"Ticket", "Order"} <= set(schemas), "the payloads' data are the API's objects"
    envelope = _envelope()
    added = {
        "WebhookEventTypeEnum": {"type": "string", "enum": types},
        "WebhookEnvelope": envelope,
        **copy.deepcopy(_DATA),
    }
    mapping = {}
    for type_ in types:
        name = _schema_name(type_)
        mapping[type_] = f"{SCHEMA}{name}"
        payload = {
            "type": "object",
            "description": f"`{type_}`: {_WHEN[type_]}",
            "required": envelope["required"],
            "properties": {
                **envelope["properties"],
                "type": {"type": "string", "enum": [type_]},
                "data": {"$ref": f"{SCHEMA}{_DATA_OF_TYPE[type_]}"},
            },
        }
        added[name] = payload
    added["WebhookEvent"] = {
        "oneOf": [{"$ref": ref} for ref in mapping.values()],
        "discriminator": {"propertyName": "type", "mapping": mapping},
        "description": "A webhook's body: one schema per `type`.",
    }
    assert not set(added) & set(schemas), set(added) & set(schemas)
    schemas.update(added)
    parameters = result["components"].setdefault("parameters", {})
    for name, header in _HEADERS.items():
        parameters[name] = {"in": "header", "required": True, **copy.deepcopy(header)}

    delivery = _delivery()
    result["x-webhooks"] = {
        type_: _receiver_request(type_, mapping[type_], delivery) for type_ in types
    }
    listed = ", ".join(f"`{type_}`" for type_ in types)
    headers = ", ".join(f"`{header['name']}`" for header in _HEADERS.values())
    section = (
        "## Webhooks\n\n"
        "An organizer's webhook endpoints (`/organizers/{organizer_id}/webhooks`) receive the "
        f"event types they subscribe to: {listed}. Each event is a POST whose JSON body is a "
        "`WebhookEvent` (`id`, `type`, `created_at`, `organizer_id`, `event_id`, `data`; one "
        "schema per type, e.g. `TicketCheckedInWebhook`), signed in the headers "
        f"{headers} (the `WebhookId`, `WebhookTimestamp` and `WebhookSignature` parameters); "
        "`x-webhooks` describes each as a request to the receiver.\n\n"
        f"{delivery}"
    )
    info = result["info"]
    info["description"] = f"{info.get('description', '')}\n\n{section}".lstrip()
    return result


def _receiver_request(type_: str, schema: str, delivery: str) -> dict:
    """`x-webhooks`' entry for one event type: the POST the receiver gets."""
    return {
        "post": {
            "operationId": f"webhook_{type_.replace('.', '_')}",
            "summary": type_,
            "description": f"{_WHEN[type_]}\n\n{delivery}",
            "tags": ["Webhooks"],
            "parameters": [{"$ref": f"{PARAMETER}{name}"} for name in _HEADERS],
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": {"$ref": schema}}},
            },
            "responses": {"2XX": {"description": "Received. Any other answer is retried."}},
        }
    }


def _envelope() -> dict:
    return {
        "type": "object",
        "description": "What every webhook's body holds; `data` depends on `type`.",
        "required": ["id", "type", "created_at", "organizer_id", "event_id", "data"],
        "properties": {
            "id": {
                "type": "string",
                "pattern": "^evt_[0-9a-f]{32}$",
                "description": "The event's id, also sent as `webhook-id`.",
            },
            "type": {"$ref": f"{SCHEMA}WebhookEventTypeEnum"},
            "created_at": {
                "type": "string",
                "format": "date-time",
                "description": "When the change was made.",
            },
            "organizer_id": {"type": "integer"},
            "event_id": {
                "type": "integer",
                "nullable": True,
                "description": "The event of the ticket or order; null for `ping`.",
            },
            "data": {
                "type": "object",
                "description": '`{"ticket": Ticket}` for the `ticket.*` types, '
                '`{"order": Order}` for `order.cancelled`, `{"webhook": {"id", "url"}}` for '
                "`ping`.",
            },
        },
    }


def _schema_name(type_: str) -> str:
    """`ticket.checked_in` → `TicketCheckedInWebhook`."""
    return "".join(word.capitalize() for word in re.split(r"[._]", type_)) + "Webhook"


def _delivery() -> str:
    """How deliveries and retries go, with this deployment's settings."""
    from .outcomes import retry_delay

    delays: list[int] = []
    for attempt in itertools.count(1):
        seconds = int(retry_delay(attempt).total_seconds())
        if delays and seconds == delays[-1]:  # the cap, or the largest delay there is
            break
        delays.append(seconds)
    schedule = ", ".join([*map(_duration, delays[:-1]), f"then every {_duration(delays[-1])}"])
    return (
        "A delivery is an answer 2xx within "
        f"{_duration(settings.WEBHOOK_TIMEOUT_SECONDS)}. Any other answer, a timeout or a "
        f"refused connection is retried after {schedule} (each wait counted from the start of "
        "the failed attempt), until the delivery is "
        f"{_duration(settings.WEBHOOK_RETRY_FOR_SECONDS)} old (from the event, or from its "
        "redelivery in the admin); then it is marked failed. An endpoint whose attempts have "
        f"all failed for {_duration(settings.WEBHOOK_DISABLE_AFTER_SECONDS)} is disabled and "
        "its owners are told. Delivery is at least once and in no set order: deduplicate by "
        "`webhook-id`, and compare `created_at` to tell an older event from a newer one."
    )


def _duration(seconds: int) -> str:
    """`90` → `1 min 30 s`; `3840` → `1 h 4 min`; hours are not turned into days."""
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    parts = [(hours, "h"), (minutes, "min"), (seconds, "s")]
    return " ".join(f"{value} {unit}" for value, unit in parts if value) or "0 s"
