"""The OpenAPI document as clients read it: generated code, docs viewers, webhook receivers.

Parameters and bodies are shapes a client generator types (no object in the query, no object
whose rules make it a union of untyped branches); the webhooks a receiver gets are described
with their headers and retries; and descriptions say what a client needs, not how the code
works.
"""

import json
import re

import pytest
from django.test import override_settings
from openapi_schema_validator import OAS30Validator
from openapi_schema_validator import validate as validate_schema
from openapi_spec_validator import validate
from rest_framework.test import APIClient

from checkin.services.gate import ticket_check_in, ticket_renew
from tickets.services.common import Actor
from tickets.services.issuing import ticket_create
from tickets.services.revoking import order_cancel
from webhooks.models import WebhookEvent
from webhooks.outbox import webhook_events_complete
from webhooks.services import webhook_endpoint_create, webhook_endpoint_ping

pytestmark = pytest.mark.django_db

API = "/api/public"
COMPONENT = "#/components/schemas/"


def _document() -> dict:
    response = APIClient().get(f"{API}/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    return json.loads(response.content)


@pytest.fixture(scope="module")
def document(django_db_blocker) -> dict:
    with django_db_blocker.unblock():
        return _document()


def _operations(document: dict):
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method in ("get", "post", "put", "patch", "delete"):
                yield path, method, operation


def _resolve(document: dict, schema: dict) -> dict:
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].removeprefix(COMPONENT)]
    return schema


# --- parameters and bodies a generator types ----------------------------------------------------


def test_no_query_parameter_is_an_object(document):
    """An object in the query is a JSON box in Swagger UI and one argument in a generated
    client, named after no parameter the API reads."""
    for path, method, operation in _operations(document):
        for parameter in operation.get("parameters", []):
            schema = _resolve(document, parameter["schema"])
            assert schema.get("type") != "object", (path, method, parameter["name"])
            assert "properties" not in schema, (path, method, parameter["name"])
            assert parameter.get("style") != "deepObject", (path, method, parameter["name"])


def test_parameter_branches_are_typed(document):
    """A parameter whose `anyOf` branches have no type of their own is `Any` to a generator,
    though every branch is text (`q`: search text, or a JSON object as text)."""
    for path, method, operation in _operations(document):
        for parameter in operation.get("parameters", []):
            for branch in parameter["schema"].get("anyOf", []):
                assert "type" in branch or "$ref" in branch, (path, method, parameter["name"])


def test_batch_scans_are_typed_objects(document):
    body = document["paths"][f"{API}/organizers/{{organizer_id}}/events/{{event_id}}/checkins"]
    upload = _resolve(
        document, body["post"]["requestBody"]["content"]["application/json"]["schema"]
    )
    items = upload["properties"]["scans"]["items"]
    assert set(items) == {"$ref"}
    scan = _resolve(document, items)
    assert scan["type"] == "object"
    assert set(scan["properties"]) == {
        "id",
        "ticket_id",
        "reference_code",
        "nfc_uid",
        "action",
        "used_at",
        "check_in_type_ids",
        "note",
    }
    assert scan["required"] == ["id", "used_at"]
    action = _resolve(document, scan["properties"]["action"]["allOf"][0])
    assert action["enum"] == ["check_in", "renew"]
    assert scan["description"].endswith(
        "Send exactly one of `reference_code`, `nfc_uid`, `ticket_id`."
    )


def test_objects_are_not_unions(document):
    """A `oneOf`/`anyOf`/`allOf` beside an object's properties makes client generators type
    the object as a union of its branches, which have no type of their own: `Any`. Rules
    between properties are stated with `not`, which validators apply and generators skip."""
    for name, schema in document["components"]["schemas"].items():
        if "properties" in schema:
            assert not {"oneOf", "anyOf", "allOf"} & set(schema), name


# --- webhooks -----------------------------------------------------------------------------------

TICKET_TYPES = ["ticket.created", "ticket.checked_in", "ticket.renewed", "ticket.revoked"]
HEADERS = ["webhook-id", "webhook-timestamp", "webhook-signature"]


def test_event_types_enum_follows_the_choices(document):
    schemas = document["components"]["schemas"]
    assert schemas["EventTypesEnum"]["enum"] == ["*", *WebhookEvent.Type.values]
    assert "ping" in schemas["EventTypesEnum"]["enum"]
    assert schemas["WebhookEventTypeEnum"]["enum"] == WebhookEvent.Type.values


def test_webhook_envelope_and_payloads_are_components(document):
    schemas = document["components"]["schemas"]
    envelope = schemas["WebhookEnvelope"]
    assert envelope["required"] == ["id", "type", "created_at", "organizer_id", "event_id", "data"]
    assert envelope["properties"]["type"] == {"$ref": f"{COMPONENT}WebhookEventTypeEnum"}
    assert envelope["properties"]["event_id"]["nullable"] is True
    assert envelope["properties"]["created_at"]["format"] == "date-time"

    event = schemas["WebhookEvent"]
    mapping = event["discriminator"]["mapping"]
    assert event["discriminator"]["propertyName"] == "type"
    assert list(mapping) == WebhookEvent.Type.values
    assert event["oneOf"] == [{"$ref": ref} for ref in mapping.values()]
    data = {}
    for type_name, ref in mapping.items():
        payload = _resolve(document, {"$ref": ref})
        assert payload["required"] == envelope["required"]
        assert payload["properties"]["type"] == {"type": "string", "enum": [type_name]}
        for name in ("id", "created_at", "organizer_id", "event_id"):
            assert payload["properties"][name] == envelope["properties"][name], (type_name, name)
        data[type_name] = _resolve(document, payload["properties"]["data"])
    for type_name in TICKET_TYPES:
        assert data[type_name]["properties"] == {"ticket": {"$ref": f"{COMPONENT}Ticket"}}
        assert data[type_name]["required"] == ["ticket"]
    assert data["order.cancelled"]["properties"] == {"order": {"$ref": f"{COMPONENT}Order"}}
    assert data["ping"]["required"] == ["webhook"]
    assert set(data["ping"]["properties"]["webhook"]["properties"]) == {"id", "url"}


def test_webhooks_are_described_as_requests_to_the_receiver(document):
    """OpenAPI 3.0 has no `webhooks`: they are `x-webhooks` (as Redoc reads them, and as 3.1's
    `webhooks`), with their headers as parameter components and the components above."""
    validate(document)  # still a valid 3.0 document
    assert document["openapi"].startswith("3.0")
    parameters = document["components"]["parameters"]
    for header in HEADERS:
        parameter = next(p for p in parameters.values() if p["name"] == header)
        assert (parameter["in"], parameter["required"]) == ("header", True)
        assert parameter["schema"]["type"] == "string"
    signature = next(p for p in parameters.values() if p["name"] == "webhook-signature")
    assert "HMAC-SHA256" in signature["description"]
    assert '"{webhook-id}.{webhook-timestamp}.{body}"' in signature["description"]

    mapping = document["components"]["schemas"]["WebhookEvent"]["discriminator"]["mapping"]
    webhooks = document["x-webhooks"]
    assert list(webhooks) == WebhookEvent.Type.values
    for type_name, item in webhooks.items():
        post = item["post"]
        refs = [p["$ref"].rsplit("/", 1)[-1] for p in post["parameters"]]
        assert [parameters[ref]["name"] for ref in refs] == HEADERS
        schema = post["requestBody"]["content"]["application/json"]["schema"]
        assert schema == {"$ref": mapping[type_name]}
        assert set(post["responses"]) == {"2XX"}
        assert post["tags"] == ["Webhooks"]


@override_settings(WEBHOOK_ALLOW_PRIVATE_URLS=True)
def test_recorded_webhooks_match_their_schemas(document, event, ticket_type):
    """Every type, as the services record it, is valid by its schema in the document."""
    endpoint, _ = webhook_endpoint_create(
        organizer_id=event.organizer_id, url="http://127.0.0.1:9/in", event_types=["*"]
    )
    holder = {"firstname": "Malee", "lastname": "Srisuk", "email": "m@example.com"}
    ticket = ticket_create(
        event=event, ticket_type_id=ticket_type.id, actor=Actor(), phone="0891234567", **holder
    ).ticket
    ticket_check_in(event=event, ticket_id=ticket.id, actor=Actor())
    ticket_renew(event=event, ticket_id=ticket.id, actor=Actor())
    order_cancel(order_id=ticket.order_id, actor=Actor())  # order.cancelled, ticket.revoked
    webhook_endpoint_ping(endpoint=endpoint)

    # As delivered: an event a statement recorded is rendered by its dispatch.
    ids = WebhookEvent.objects.order_by("created_at", "id").values_list("pk", flat=True)
    payloads = [e.payload for e in webhook_events_complete(list(ids))]
    assert sorted(p["type"] for p in payloads) == sorted(WebhookEvent.Type.values)
    root = {"components": document["components"]}
    for payload in payloads:
        schema = {**root, "$ref": f"{COMPONENT}WebhookEvent"}
        validate_schema(payload, schema, cls=OAS30Validator)  # raises on any mismatch
        by_type = {**root, "$ref": f"{COMPONENT}{_type_schema(document, payload['type'])}"}
        validate_schema(payload, by_type, cls=OAS30Validator)


def _type_schema(document: dict, type_name: str) -> str:
    mapping = document["components"]["schemas"]["WebhookEvent"]["discriminator"]["mapping"]
    return mapping[type_name].removeprefix(COMPONENT)


def test_webhook_retries_are_stated_from_the_settings(document):
    text = document["x-webhooks"]["ticket.created"]["post"]["description"]
    assert "10 s" in text  # the timeout
    assert "15 s, 30 s, 1 min, 2 min, 4 min" in text
    assert "then every 4 h" in text
    assert "24 h" in text
    assert "webhook-id" in text  # receivers deduplicate by it
    type_sentence, delivery = text.split("\n\n", 1)
    assert type_sentence == "A ticket was issued, through the API or by an import."
    assert delivery in document["info"]["description"]  # Swagger UI shows no `x-webhooks`


@override_settings(
    WEBHOOK_RETRY_BASE_SECONDS=60,
    WEBHOOK_RETRY_MAX_DELAY_SECONDS=600,
    WEBHOOK_RETRY_FOR_SECONDS=2 * 24 * 60 * 60,
    WEBHOOK_TIMEOUT_SECONDS=5,
)
def test_webhook_retries_follow_other_settings():
    text = _document()["x-webhooks"]["ping"]["post"]["description"]
    assert "1 min, 2 min, 4 min, 8 min, then every 10 min" in text
    assert "48 h" in text
    assert "5 s" in text


# --- descriptions for clients -------------------------------------------------------------------

# How the code works, which a client neither sees nor needs: method, module and class names,
# query plans, the internal contract's section numbers.
INTERNAL = re.compile(
    r"to_representation|selector|statement|\bcache|prefetch|annotat|queryset|serializer|"
    r"benchmark|\bCONTRACT\b|\bSQL\b|\bquery per\b|\bcounter\b|Row\b|\brows?\b|`parse`|"
    r"\b(?:accounts|events|organizers|tickets|webhooks|ticketing|oauth_setup)\.[a-z_]+",
)


def _descriptions(node, where=""):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("description", "summary", "title") and isinstance(value, str):
                yield f"{where}/{key}", value
            else:
                yield from _descriptions(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _descriptions(value, f"{where}/{index}")


def test_descriptions_name_nothing_internal(document):
    leaks = [
        (where, match.group(0))
        for where, text in _descriptions(document)
        if (match := INTERNAL.search(text))
    ]
    assert leaks == []


def test_the_internal_words_are_caught():
    for text in (
        "`to_representation` builds the dict",
        "reads a `ScannerTicketRow`",
        "Reads `role` from the selector's annotation.",
        "(`tickets.selectors`: `tickets_for_output`)",
        "fails alone (`parse`)",
        "The caller's own tickets (CONTRACT §8)",
        "counts come from the counter, not a query per row",
    ):
        assert INTERNAL.search(text), text
