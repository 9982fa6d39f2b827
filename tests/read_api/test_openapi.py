"""The OpenAPI document (CONTRACT §1): served as YAML or JSON, valid, and true to the code.

Real responses of every endpoint, successes and errors, are validated against the served
document with openapi-core, and every route under /api/public must appear in it with every
method, and be exercised here with at least one success: a new endpoint without cases fails.
"""

import json
import re
from dataclasses import dataclass, field
from types import SimpleNamespace
from urllib.parse import urlencode

import pytest
import yaml
from django.db import OperationalError
from django.test import override_settings
from django.urls import URLPattern, URLResolver, get_resolver
from openapi_core import OpenAPI
from openapi_core.contrib.django import DjangoOpenAPIRequest, DjangoOpenAPIResponse
from openapi_spec_validator import validate
from rest_framework.test import APIClient

from tests.factories import (
    CheckInTypeFactory,
    EventFactory,
    OrderFactory,
    TicketFactory,
    TicketTypeFactory,
    WebhookEndpointFactory,
)
from tests.support import TokenClient, mint_token

pytestmark = pytest.mark.django_db

API = "/api/public"
NOT_DESCRIBED = ("/api/public/schema/", "/api/public/docs/")  # the document and its viewer


@pytest.fixture(scope="module")
def served_schema(django_db_blocker) -> dict:
    with django_db_blocker.unblock():
        response = APIClient().get(f"{API}/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    return json.loads(response.content)


@pytest.fixture(scope="module")
def openapi(served_schema) -> OpenAPI:
    return OpenAPI.from_dict(served_schema)


# --- the document itself -----------------------------------------------------------------------


def test_schema_is_yaml_by_default_and_json_on_request(api_client):
    as_yaml = api_client.get(f"{API}/schema/")
    assert as_yaml.status_code == 200
    assert as_yaml["Content-Type"].startswith("application/vnd.oai.openapi")
    document = yaml.safe_load(as_yaml.content)
    assert document["openapi"].startswith("3.")

    by_accept = api_client.get(f"{API}/schema/", HTTP_ACCEPT="application/json")
    by_query = api_client.get(f"{API}/schema/", {"format": "json"})
    assert by_accept["Content-Type"] == "application/json"
    assert by_query["Content-Type"].startswith("application/vnd.oai.openapi+json")
    assert json.loads(by_accept.content) == json.loads(by_query.content) == document


def test_schema_is_a_valid_openapi_document(served_schema):
    validate(served_schema)


def test_schema_covers_only_the_public_api(served_schema):
    paths = list(served_schema["paths"])
    assert paths and all(p.startswith(f"{API}/") for p in paths)
    assert not any(p.startswith(NOT_DESCRIBED) for p in paths)


def _api_routes() -> dict[str, set[str]]:
    """Every route under /api/public as an OpenAPI path, with the methods its view serves."""
    routes: dict[str, set[str]] = {}

    def walk(patterns, prefix):
        for pattern in patterns:
            route = prefix + str(pattern.pattern).lstrip("^").rstrip("$")
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, route)
            elif isinstance(pattern, URLPattern) and pattern.name != "api-unknown-route":
                path = "/" + DjangoOpenAPIRequest.path_regex.sub(r"{\1}", route)
                if not path.startswith(f"{API}/") or path.startswith(NOT_DESCRIBED):
                    continue
                view = getattr(pattern.callback, "view_class", None)
                assert view is not None, f"{path} is not a class-based API view"
                methods = {m for m in view.http_method_names if m not in ("options", "head")} & {
                    m for m in dir(view)
                }
                routes.setdefault(path, set()).update(methods)

    walk(get_resolver().url_patterns, "")
    return routes


def test_every_route_and_method_is_in_the_schema(served_schema):
    routes = _api_routes()
    described = {
        path: {m for m in item if m in ("get", "post", "put", "patch", "delete")}
        for path, item in served_schema["paths"].items()
    }
    assert described == routes


def test_security_schemes_describe_both_token_kinds(served_schema):
    schemes = served_schema["components"]["securitySchemes"]
    assert schemes["userToken"]["flows"] == {
        "authorizationCode": {
            "authorizationUrl": "/oauth/authorize",
            "tokenUrl": "/oauth/token",
            "refreshUrl": "/oauth/token",
            "scopes": {
                "public": "Your profile, and your own tickets and orders",
                "organizer": "All orders and tickets of the events of organizers you belong to",
            },
        }
    }
    assert schemes["applicationToken"]["flows"]["clientCredentials"]["tokenUrl"] == "/oauth/token"
    assert schemes["bearerToken"] == {
        "type": "http",
        "scheme": "bearer",
        "description": schemes["bearerToken"]["description"],
    }
    assert schemes["accessTokenQuery"]["in"] == "query"
    events = served_schema["paths"][f"{API}/organizers/{{organizer_id}}/events"]["get"]
    assert {"userToken": ["organizer"]} in events["security"]
    assert {"applicationToken": ["public"]} in events["security"]
    me = served_schema["paths"][f"{API}/me"]["get"]
    assert {"userToken": ["public"]} in me["security"]
    assert {"applicationToken": ["public"]} not in me["security"]


def test_list_parameters_have_enums_and_defaults(served_schema):
    operation = served_schema["paths"][
        f"{API}/organizers/{{organizer_id}}/events/{{event_id}}/tickets"
    ]["get"]
    params = {p["name"]: p for p in operation["parameters"]}
    assert params["order_by"]["schema"]["enum"] == [
        "id",
        "created_at",
        "updated_at",
        "used_at",
        "reference_code",
    ]
    assert params["order_by"]["schema"]["default"] == "id"
    assert params["order"]["schema"] == {
        "type": "string",
        "enum": ["asc", "desc"],
        "default": "asc",
    }
    assert params["per_page"]["schema"]["maximum"] == 100
    assert params["per_page"]["schema"]["default"] == 10
    assert params["status"]["schema"]["items"]["enum"] == ["active", "used", "revoked"]
    assert (params["status"]["style"], params["status"]["explode"]) == ("form", False)
    for name in (
        "ticket_type_id",
        "email",
        "phone",
        "updated_before",
        "updated_after",
        "min_id",
        "max_id",
        "q",
    ):
        assert name in params
    errors = served_schema["components"]["schemas"]
    assert "UnauthorizedError" in errors and "InvalidParametersError" in errors
    assert set(operation["responses"]) == {"200", "400", "401", "403", "404", "429", "500", "503"}


def test_docs_page_renders_without_a_cdn(api_client):
    response = api_client.get(f"{API}/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert f"{API}/docs/assets/swagger-ui-bundle.js" in html
    assert f"{API}/schema/" in html
    # Everything the page loads is ours: no address names another site (a bare "cdn" search
    # failed once on a random nonce that held those letters).
    loaded = re.findall(r'(?:src|href)\s*=\s*["\']([^"\']+)', html)
    assert loaded and all(url.startswith("/") and not url.startswith("//") for url in loaded)
    assert not re.search(r"https?://", html.replace("http://testserver", ""))
    asset = api_client.get(f"{API}/docs/assets/swagger-ui-bundle.js")
    assert asset.status_code == 200
    assert api_client.get(f"{API}/docs/assets/..%2Fswagger-ui.css").status_code == 404


def test_docs_offer_sign_in_with_pkce_and_serve_its_redirect_page(api_client):
    """Swagger UI's Authorize comes back to `oauth2-redirect.html` beside the docs page, which
    hands the code to the page that opened the popup (the browser test runs the whole flow)."""
    docs = api_client.get(f"{API}/docs/")
    assert '"usePkceWithAuthorizationCodeGrant": true' in docs.content.decode()
    # Same-origin sign-in pages keep the popup's opener only if this page is same-origin too.
    assert docs["Cross-Origin-Opener-Policy"] == "same-origin"
    landing = api_client.get(f"{API}/docs/oauth2-redirect.html?code=x&state=y")
    assert landing.status_code == 200
    assert b'<script src="oauth2-redirect.js"></script>' in b"".join(landing.streaming_content)
    script = api_client.get(f"{API}/docs/oauth2-redirect.js")
    assert script.status_code == 200
    assert b"window.opener.swaggerUIRedirectOauth2" in b"".join(script.streaming_content)


# --- real responses against the document -------------------------------------------------------


@pytest.fixture
def world(organizer, application, member, buyer, platform_application):
    event = EventFactory(organizer=organizer, title="Songkran Beats")
    ticket_type = TicketTypeFactory(event=event, name="Regular", quantity=100)
    order = OrderFactory(event=event, buyer=buyer)
    CheckInTypeFactory(event=EventFactory(organizer=organizer))
    draft_type = TicketTypeFactory(event=EventFactory(organizer=organizer, status="draft"))
    return SimpleNamespace(
        organizer_id=organizer.id,
        event_id=event.id,
        draft_event_id=draft_type.event_id,
        draft_ticket_type_id=draft_type.id,
        webhook_id=WebhookEndpointFactory(organizer=organizer).id,
        ticket_type_id=ticket_type.id,
        active=TicketFactory(event=event, ticket_type=ticket_type, order=order, nfc_uid="04:A1"),
        active2=TicketFactory(event=event, ticket_type=ticket_type, order=order),
        used=TicketFactory(event=event, ticket_type=ticket_type, order=order, status="used"),
        revoked=TicketFactory(event=event, ticket_type=ticket_type, order=order, status="revoked"),
        clients={
            "anonymous": APIClient(),
            "app": TokenClient(mint_token(application=application)),
            "organizer": TokenClient(
                mint_token(application=application, user=member, scope="public organizer")
            ),
            "buyer": TokenClient(mint_token(application=application, user=buyer)),
            "platform_app": TokenClient(mint_token(application=platform_application)),
        },
    )


@dataclass
class Case:
    name: str
    method: str
    path: str  # an OpenAPI path; {organizer_id}, {event_id}, {ticket_id} filled from the world
    client: str
    status: int
    params: dict = field(default_factory=dict)  # query (GET) or JSON body (POST); may use {...}
    ticket: str = "active"
    before: int = 0  # times to send the same request first (for conflicts)


EVENT = "/organizers/{organizer_id}/events/{event_id}"
SCAN = f"{EVENT}/tickets/checkin"
CHECKIN = f"{EVENT}/tickets/{{ticket_id}}/checkin"
SCAN_RENEW = f"{EVENT}/tickets/renew"
CREATE = {
    "ticket_type_id": "{ticket_type_id}",
    "firstname": "Somsak",
    "lastname": "Jaidee",
    "email": "somsak@example.com",
    "phone": "0812345678",
    "external_id": "ext-1",
}
CASES = [
    Case("info", "get", "/info", "anonymous", 200),
    Case("me", "get", "/me", "buyer", 200),
    Case("me without token", "get", "/me", "anonymous", 401),
    Case("me with app token", "get", "/me", "app", 403),
    Case("organizers (user)", "get", "/organizers", "organizer", 200),
    Case("organizers (app)", "get", "/organizers", "app", 200),
    Case("organizers bad order", "get", "/organizers", "organizer", 400, {"order_by": "x"}),
    Case("organizers without token", "get", "/organizers", "anonymous", 401),
    Case("events", "get", "/organizers/{organizer_id}/events", "app", 200, {"q": "songkran"}),
    Case(
        "events bad status", "get", "/organizers/{organizer_id}/events", "app", 400, {"status": "x"}
    ),
    Case("events no token", "get", "/organizers/{organizer_id}/events", "anonymous", 401),
    Case("events public scope", "get", "/organizers/{organizer_id}/events", "buyer", 403),
    Case("events platform app", "get", "/organizers/{organizer_id}/events", "platform_app", 403),
    Case("events unknown organizer", "get", "/organizers/2147483647/events", "app", 404),
    Case("event", "get", EVENT, "organizer", 200),
    Case("event missing", "get", "/organizers/{organizer_id}/events/2147483647", "app", 404),
    Case("check-in types", "get", f"{EVENT}/check_in_types", "app", 200),
    Case(
        "check-in types missing",
        "get",
        "/organizers/{organizer_id}/events/0/check_in_types",
        "app",
        404,
    ),
    Case(
        "tickets",
        "get",
        f"{EVENT}/tickets",
        "app",
        200,
        {"status": "active,used", "order_by": "used_at"},
    ),
    Case("tickets bad per_page", "get", f"{EVENT}/tickets", "app", 400, {"per_page": "0"}),
    Case("tickets bad q", "get", f"{EVENT}/tickets", "app", 400, {"q": "{"}),
    Case("tickets missing event", "get", "/organizers/{organizer_id}/events/0/tickets", "app", 404),
    Case("search", "get", f"{EVENT}/tickets/search", "app", 200, {"nfc_uid": "04:A1"}),
    Case(
        "search two keys",
        "get",
        f"{EVENT}/tickets/search",
        "app",
        400,
        {"nfc_uid": "a", "ticket_id": "1"},
    ),
    Case(
        "search miss", "get", f"{EVENT}/tickets/search", "app", 404, {"reference_code": "NOPE2345"}
    ),
    Case("create", "post", f"{EVENT}/tickets", "organizer", 200, CREATE),
    Case("create replay", "post", f"{EVENT}/tickets", "organizer", 200, CREATE, before=1),
    Case("create invalid", "post", f"{EVENT}/tickets", "organizer", 400, {"phone": "123"}),
    Case("create with app token", "post", f"{EVENT}/tickets", "app", 403, CREATE),
    Case(
        "create missing event",
        "post",
        "/organizers/{organizer_id}/events/0/tickets",
        "organizer",
        404,
        CREATE,
    ),
    Case(
        "create conflict",
        "post",
        f"{EVENT}/tickets",
        "organizer",
        409,
        {**CREATE, "reference_code": "{reference_code}"},
    ),
    Case(
        "create draft event",
        "post",
        "/organizers/{organizer_id}/events/{draft_event_id}/tickets",
        "organizer",
        422,
        {**CREATE, "ticket_type_id": "{draft_ticket_type_id}"},
    ),
    Case("check in", "post", f"{EVENT}/tickets/{{ticket_id}}/checkin", "app", 200),
    Case(
        "check in used", "post", f"{EVENT}/tickets/{{ticket_id}}/checkin", "app", 422, ticket="used"
    ),
    Case(
        "check in revoked",
        "post",
        f"{EVENT}/tickets/{{ticket_id}}/checkin",
        "organizer",
        422,
        ticket="revoked",
    ),
    Case("check in missing", "post", f"{EVENT}/tickets/2147483647/checkin", "app", 404),
    Case(
        "check in bad time",
        "post",
        f"{EVENT}/tickets/{{ticket_id}}/checkin",
        "app",
        400,
        {"used_at": "soon"},
    ),
    Case("renew", "post", f"{EVENT}/tickets/{{ticket_id}}/renew", "app", 200, ticket="used"),
    Case("renew unused", "post", f"{EVENT}/tickets/{{ticket_id}}/renew", "app", 422),
    Case("scan", "post", SCAN, "app", 200, {"reference_code": " {reference_code} "}),
    Case("scan used", "post", SCAN, "organizer", 422, {"ticket_id": "{ticket_id}"}, ticket="used"),
    Case("scan miss", "post", SCAN, "app", 404, {"reference_code": "NOPE2345"}),
    Case("scan two keys", "post", SCAN, "app", 400, {"reference_code": "A", "nfc_uid": "B"}),
    Case("scan renew", "post", SCAN_RENEW, "app", 200, {"ticket_id": "{ticket_id}"}, ticket="used"),
    Case("scan renew unused", "post", SCAN_RENEW, "app", 422, {"nfc_uid": "04:A1"}),
    Case(
        "invalidate",
        "post",
        f"{EVENT}/tickets/invalidate",
        "app",
        200,
        {"ticket_id": "{ticket_id}", "reason": "Refund"},
    ),
    Case(
        "invalidate revoked",
        "post",
        f"{EVENT}/tickets/invalidate",
        "app",
        422,
        {"ticket_id": "{ticket_id}"},
        ticket="revoked",
    ),
    Case("invalidate nothing", "post", f"{EVENT}/tickets/invalidate", "app", 400, {}),
    Case("sync", "get", f"{EVENT}/tickets/sync", "app", 200, {"limit": "2"}),
    Case("sync bad cursor", "get", f"{EVENT}/tickets/sync", "app", 400, {"cursor": "x"}),
    Case(
        "sync missing event", "get", "/organizers/{organizer_id}/events/0/tickets/sync", "app", 404
    ),
    Case(
        "batch",
        "post",
        f"{EVENT}/checkins",
        "app",
        200,
        {
            "scans": [
                {"id": "scan-0001", "reference_code": "NOPE2345", "used_at": "2026-01-10T12:00Z"}
            ]
        },
    ),
    Case("batch malformed", "post", f"{EVENT}/checkins", "app", 400, {"scans": []}),
    Case("check-in stats", "get", f"{EVENT}/check_in_stats", "organizer", 200),
    Case(
        "user tickets",
        "get",
        "/organizers/{organizer_id}/tickets",
        "buyer",
        200,
        {"q": '{"event_id": {event_id}}'},
    ),
    Case(
        "user tickets bad q",
        "get",
        "/organizers/{organizer_id}/tickets",
        "buyer",
        400,
        {"q": '{"x": 1}'},
    ),
    Case("user tickets app token", "get", "/organizers/{organizer_id}/tickets", "app", 403),
    Case(
        "user orders",
        "get",
        "/organizers/{organizer_id}/orders",
        "buyer",
        200,
        {"order_by": "paid_at"},
    ),
    Case(
        "user orders bad order",
        "get",
        "/organizers/{organizer_id}/orders",
        "buyer",
        400,
        {"order": "up"},
    ),
    Case("user orders no token", "get", "/organizers/{organizer_id}/orders", "anonymous", 401),
    Case(
        "ticket search",
        "get",
        "/tickets/search",
        "buyer",
        200,
        {"event_id": "{event_id}", "reference_code": "{reference_code}"},
    ),
    Case(
        "ticket search no code", "get", "/tickets/search", "buyer", 400, {"event_id": "{event_id}"}
    ),
    Case(
        "ticket search platform app",
        "get",
        "/tickets/search",
        "platform_app",
        403,
        {"event_id": "1", "reference_code": "ABCD2345"},
    ),
    Case(
        "ticket search miss",
        "get",
        "/tickets/search",
        "organizer",
        404,
        {"event_id": "{event_id}", "reference_code": "NOPE2345"},
    ),
    Case("webhooks", "get", "/organizers/{organizer_id}/webhooks", "organizer", 200),
    Case("webhooks with app token", "get", "/organizers/{organizer_id}/webhooks", "app", 403),
    Case(
        "webhook create",
        "post",
        "/organizers/{organizer_id}/webhooks",
        "organizer",
        201,
        {"url": "https://93.184.215.14/hooks", "event_types": ["ticket.checked_in"]},
    ),
    Case(
        "webhook create refused",
        "post",
        "/organizers/{organizer_id}/webhooks",
        "organizer",
        400,
        {"url": "https://10.0.0.1/hooks", "event_types": ["*"]},
    ),
    Case(
        "webhook test",
        "post",
        "/organizers/{organizer_id}/webhooks/{webhook_id}/test",
        "organizer",
        200,
    ),
    Case(
        "webhook test missing",
        "post",
        "/organizers/{organizer_id}/webhooks/0/test",
        "organizer",
        404,
    ),
    Case(
        "webhook delete",
        "delete",
        "/organizers/{organizer_id}/webhooks/{webhook_id}",
        "organizer",
        200,
    ),
]


def _fill(value, values: dict):
    if isinstance(value, str):
        filled = value
        for key, replacement in values.items():
            filled = filled.replace("{" + key + "}", str(replacement))
        return filled
    return value


def _send(case: Case, world):
    ticket = getattr(world, case.ticket)
    values = {
        "organizer_id": world.organizer_id,
        "event_id": world.event_id,
        "draft_event_id": world.draft_event_id,
        "draft_ticket_type_id": world.draft_ticket_type_id,
        "ticket_type_id": world.ticket_type_id,
        "ticket_id": ticket.id,
        "reference_code": ticket.reference_code,
        "webhook_id": world.webhook_id,
    }
    url = API + _fill(case.path, values)
    params = {key: _fill(value, values) for key, value in case.params.items()}
    client = world.clients[case.client]
    if case.method == "get":
        return client.get(url, params)
    if case.method == "delete":
        return client.delete(url)
    return client.post(url, params, format="json")


def _validate(openapi: OpenAPI, response) -> None:
    openapi.validate_response(
        DjangoOpenAPIRequest(response.wsgi_request), DjangoOpenAPIResponse(response)
    )


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_real_responses_match_the_schema(case, world, openapi):
    for _ in range(case.before):
        _send(case, world)
    response = _send(case, world)
    assert response.status_code == case.status, response.content
    body = response.json()
    if case.status >= 400:
        assert body["success"] is False and isinstance(body["error"], str)
    _validate(openapi, response)


def test_every_operation_has_a_success_case(served_schema):
    exercised = {(API + c.path, c.method) for c in CASES if c.status < 300}
    described = {
        (path, method)
        for path, item in served_schema["paths"].items()
        for method in item
        if method in ("get", "post", "put", "patch", "delete")
    }
    assert described <= exercised, sorted(described - exercised)


@override_settings(API_RATE_LIMIT="1/m")
def test_rate_limited_response_matches_the_schema(world, openapi):
    client = world.clients["app"]
    url = f"{API}/organizers/{world.organizer_id}/events"
    assert client.get(url).status_code == 200
    response = client.get(url)
    assert response.status_code == 429
    assert int(response["Retry-After"]) >= 1
    assert response.json()["error"] == "rate_limited"
    _validate(openapi, response)


def test_unavailable_database_response_matches_the_schema(world, openapi, monkeypatch):
    def unreachable(**kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr("events.views.events_for_organizer", unreachable)
    response = world.clients["app"].get(f"{API}/organizers/{world.organizer_id}/events")
    assert response.status_code == 503
    assert response.json() == {
        "success": False,
        "error": "service_unavailable",
        "message": "The service is briefly unavailable; try again shortly.",
    }
    assert response["Retry-After"] == "5"
    _validate(openapi, response)


def test_method_not_allowed_uses_the_error_envelope(world):
    response = world.clients["app"].delete(f"{API}/organizers/{world.organizer_id}/events")
    assert response.status_code == 405
    assert response.json()["error"] == "method_not_allowed"
    assert response.json()["success"] is False


# --- the document states the rules the server enforces on requests (issue 12) -----------------
#
# A client generated from the document must never send a request the API refuses for a reason
# the document does not state. Each case is sent for real and also validated against the
# document (openapi-core): the server's answer and the document's verdict must agree. Refusals
# for state (422) or for missing objects (404) are not about the request's shape.


def _query_parameters(served_schema, path: str, method: str = "get") -> dict[str, dict]:
    operation = served_schema["paths"][f"{API}{path}"][method]
    return {p["name"]: p for p in operation.get("parameters", []) if p["in"] == "query"}


def _request_component(served_schema, path: str) -> dict:
    operation = served_schema["paths"][f"{API}{path}"]["post"]
    body = operation["requestBody"]["content"]["application/json"]
    name = body["schema"]["$ref"].rsplit("/", 1)[-1]
    return served_schema["components"]["schemas"][name]


SEARCH_RULE = "Send exactly one of `reference_code`, `nfc_uid`, `ticket_id`."


def test_event_ticket_search_states_exactly_one_key(served_schema):
    """Three plain query parameters, each optional, the rule in words: OpenAPI cannot relate
    parameters, and one object parameter (`form`, exploded) became a JSON box in Swagger UI and
    an argument named after no documented parameter in generated clients."""
    path = f"{EVENT}/tickets/search"
    params = _query_parameters(served_schema, path)
    assert set(params) == {"reference_code", "nfc_uid", "ticket_id"}
    for param in params.values():
        assert param.get("required", False) is False
        assert param["description"].endswith(SEARCH_RULE)
        assert "style" not in param and "explode" not in param
    assert params["ticket_id"]["schema"] == {
        "type": "integer",
        "format": "int32",
        "minimum": 1,
        "maximum": 2147483647,
    }
    assert params["nfc_uid"]["schema"]["maxLength"] == 64
    operation = served_schema["paths"][f"{API}{path}"]["get"]
    assert SEARCH_RULE in operation["description"]


def test_invalidate_states_ticket_id_or_reference_code(served_schema):
    """As a `not` (neither key sent), which validators apply and generators leave out: an
    `anyOf` beside the properties made generated clients type the body as `Any`."""
    schema = _request_component(served_schema, f"{EVENT}/tickets/invalidate")
    assert schema["not"] == {
        "not": {"anyOf": [{"required": ["ticket_id"]}, {"required": ["reference_code"]}]}
    }
    assert not {"anyOf", "oneOf", "allOf"} & set(schema)
    assert schema["description"].endswith("Send at least one of `ticket_id`, `reference_code`.")
    operation = served_schema["paths"][f"{API}{EVENT}/tickets/invalidate"]["post"]
    assert operation["requestBody"]["required"] is True  # no body names no ticket


def test_query_parameters_are_never_empty(served_schema):
    for path, item in served_schema["paths"].items():
        for parameter in item.get("get", {}).get("parameters", []):
            schema = parameter["schema"]
            if parameter["in"] != "query" or "enum" in schema or "format" in schema:
                continue
            if schema.get("type") == "string":
                assert schema["minLength"] >= 1, (path, parameter["name"])
            if schema.get("type") == "array":
                assert schema["minItems"] >= 1, (path, parameter["name"])


def test_text_inputs_state_their_rules(served_schema):
    create = _request_component(served_schema, f"{EVENT}/tickets")["properties"]
    # Not blank, no control, invisible or direction character, no line break (tickets.names).
    refused = (
        r"\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e"
        r"\u2060-\u2064\u2066-\u2069\ufeff"
    )
    name = rf"^[^{refused}]*[^{_SPACE}{refused}][^{refused}]*$"
    assert create["firstname"]["pattern"] == create["lastname"]["pattern"] == name
    assert create["phone"]["pattern"] == r"^(?:\+66|0)(?:6[1-6]|[89][0-9])[0-9]{7}$"
    assert create["reference_code"]["pattern"].endswith(
        r"(?:[A-Za-z0-9-]{6,32})?[" + _SPACE + "]*$"
    )
    check_in = _request_component(served_schema, f"{EVENT}/tickets/{{ticket_id}}/checkin")
    assert check_in["properties"]["note"]["pattern"] == r"^[^\u0000]*$"
    assert check_in["properties"]["used_at"]["format"] == "date-time"
    assert check_in["properties"]["used_at"]["pattern"] == r"^(?!2000-01-01\S*\+)[2-9][0-9]{3}-"
    assert check_in["properties"]["check_in_type_ids"]["maxItems"] == 100
    q = _query_parameters(served_schema, "/organizers/{organizer_id}/events")["q"]["schema"]
    assert [branch["title"] for branch in q["anyOf"]] == [
        "Search text",
        "Exact filters (a JSON object)",
    ]


def test_bodies_are_documented_as_json_only(served_schema):
    """One media type per body: a body listed as a form too became, in generated clients, one
    call sending every encoding at once (the JSON header over a multipart body, a 400). A body
    is required when it must name something: a required field, or a rule between fields."""
    bodies = {
        (path, method): operation["requestBody"]
        for path, item in served_schema["paths"].items()
        for method, operation in item.items()
        if "requestBody" in operation
    }
    assert bodies
    for where, body in bodies.items():
        assert list(body["content"]) == ["application/json"], where
        ref = body["content"]["application/json"]["schema"]["$ref"]
        schema = served_schema["components"]["schemas"][ref.rsplit("/", 1)[-1]]
        asks = bool(schema.get("required")) or "not" in schema
        assert body.get("required", False) is asks, where
    assert _request_component(served_schema, CHECKIN)["properties"]["used_at"]["nullable"] is True


FORMS = [  # urlencoded bodies, which the document no longer lists, and the server's answer
    pytest.param(CHECKIN, {"used_at": ""}, 200, id="check in, no time"),
    pytest.param(SCAN, {"nfc_uid": "04:A1"}, 200, id="scan by tag"),
    pytest.param(SCAN, {"ticket_id": "{ticket_id}"}, 200, id="scan by id"),
    pytest.param(SCAN, {"ticket_id": ""}, 400, id="scan, empty id"),
]


@pytest.mark.parametrize(("path", "fields", "status"), FORMS)
def test_form_bodies_are_read_though_not_documented(world, path, fields, status):
    """Forms stay accepted (CONTRACT §1), an empty field read as JSON's null."""
    values = {
        "organizer_id": world.organizer_id,
        "event_id": world.event_id,
        "ticket_id": world.active.id,
    }
    body = urlencode({key: _fill(value, values) for key, value in fields.items()})
    form = "application/x-www-form-urlencoded"
    response = world.clients["app"].post(API + _fill(path, values), body, content_type=form)
    assert response.status_code == status, response.content


_SPACE = (
    r"\t\n\u000b\u000c\r\u001c-\u001f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f"
    r"\u205f\u3000"
)


@dataclass
class Agreement:
    name: str
    method: str
    path: str
    client: str
    params: dict
    valid: bool  # what both the document and the server must say
    ticket: str = "active"


SEARCH = f"{EVENT}/tickets/search"
AGREEMENTS = [
    Agreement("search by one key", "get", SEARCH, "app", {"nfc_uid": "04:A1"}, True),
    Agreement("search by no key", "get", SEARCH, "app", {}, False),
    Agreement("search by two keys", "get", SEARCH, "app", {"nfc_uid": "a", "ticket_id": 1}, False),
    Agreement("search by a blank code", "get", SEARCH, "app", {"reference_code": " "}, False),
    Agreement("search code \\x1f only", "get", SEARCH, "app", {"reference_code": "\x1f"}, False),
    Agreement("search by NUL", "get", SEARCH, "app", {"nfc_uid": "a\x00"}, False),
    Agreement("empty q", "get", "/organizers/{organizer_id}/events", "app", {"q": ""}, False),
    Agreement("blank q", "get", "/organizers/{organizer_id}/events", "app", {"q": "  "}, True),
    Agreement("text q", "get", "/organizers/{organizer_id}/events", "app", {"q": "kran"}, True),
    Agreement(
        "broken JSON q", "get", "/organizers/{organizer_id}/events", "app", {"q": "{"}, False
    ),
    Agreement(
        "JSON q",
        "get",
        "/organizers/{organizer_id}/events",
        "app",
        {"q": '{"status": "active"}'},
        True,
    ),
    Agreement(
        "JSON q, unknown key",
        "get",
        "/organizers/{organizer_id}/events",
        "app",
        {"q": '{"x": 1}'},
        False,
    ),
    Agreement(
        "JSON q, id 0", "get", "/organizers/{organizer_id}/events", "app", {"q": '{"id": 0}'}, False
    ),
    Agreement(
        "empty status", "get", "/organizers/{organizer_id}/events", "app", {"status": ""}, False
    ),
    Agreement("empty page", "get", "/organizers/{organizer_id}/events", "app", {"page": ""}, False),
    Agreement(
        "phone filter without digit", "get", f"{EVENT}/tickets", "app", {"phone": "abc"}, False
    ),
    Agreement("phone filter", "get", f"{EVENT}/tickets", "app", {"phone": "081-234"}, True),
    Agreement("create", "post", f"{EVENT}/tickets", "organizer", CREATE, True),
    Agreement(
        "create, bad phone",
        "post",
        f"{EVENT}/tickets",
        "organizer",
        {**CREATE, "phone": "0"},
        False,
    ),
    Agreement(
        "create, blank name",
        "post",
        f"{EVENT}/tickets",
        "organizer",
        {**CREATE, "lastname": " "},
        False,
    ),
    Agreement(
        "create, short code",
        "post",
        f"{EVENT}/tickets",
        "organizer",
        {**CREATE, "reference_code": "AB1"},
        False,
    ),
    Agreement(
        "create, code",
        "post",
        f"{EVENT}/tickets",
        "organizer",
        {**CREATE, "external_id": "ext-2", "reference_code": " new-code-1 "},
        True,
    ),
    Agreement(
        "create, code in many spaces",
        "post",
        f"{EVENT}/tickets",
        "organizer",
        {**CREATE, "reference_code": " " * 40 + "pad-code-1" + "\u3000" * 40},
        True,
    ),
    Agreement(
        "create, 0 as false",
        "post",
        f"{EVENT}/tickets",
        "organizer",
        {**CREATE, "suppress_notifications": 0},
        True,
    ),
    Agreement(
        "create, maybe as a boolean",
        "post",
        f"{EVENT}/tickets",
        "organizer",
        {**CREATE, "suppress_notifications": "maybe"},
        False,
    ),
    Agreement("check in", "post", CHECKIN, "app", {"used_at": "2000-06-01T00:00:00Z"}, True),
    Agreement(
        "check in in 1999", "post", CHECKIN, "app", {"used_at": "1999-12-31T23:59:59Z"}, False
    ),
    Agreement(
        "check in before 2000 UTC",
        "post",
        CHECKIN,
        "app",
        {"used_at": "2000-01-01T06:00:00+07:00"},
        False,
    ),
    Agreement("check in, NUL note", "post", CHECKIN, "app", {"note": "a\x00b"}, False),
    Agreement("check in, null time", "post", CHECKIN, "app", {"used_at": None}, True),
    Agreement("check in, empty time", "post", CHECKIN, "app", {"used_at": ""}, False),
    Agreement("scan by code", "post", SCAN, "app", {"reference_code": " {reference_code}"}, True),
    Agreement("scan by tag", "post", SCAN, "app", {"nfc_uid": "04:A1"}, True),
    Agreement("scan by id", "post", SCAN, "app", {"ticket_id": "{ticket_id}"}, True),
    Agreement("scan by no key", "post", SCAN, "app", {"note": "x"}, False),
    Agreement(
        "scan by code and tag",
        "post",
        SCAN,
        "app",
        {"reference_code": "{reference_code}", "nfc_uid": "04:A1"},
        False,
    ),
    Agreement("scan by a blank code", "post", SCAN, "app", {"reference_code": " "}, False),
    Agreement("scan, empty id", "post", SCAN, "app", {"ticket_id": ""}, False),
    Agreement("scan renew by no key", "post", SCAN_RENEW, "app", {}, False),
    Agreement(
        "scan renew by code",
        "post",
        SCAN_RENEW,
        "app",
        {"reference_code": "{reference_code}"},
        True,
        ticket="used",
    ),
    Agreement("invalidate, empty object", "post", f"{EVENT}/tickets/invalidate", "app", {}, False),
    Agreement(
        "invalidate without a key",
        "post",
        f"{EVENT}/tickets/invalidate",
        "app",
        {"reason": "x"},
        False,
    ),
    Agreement(
        "invalidate by code",
        "post",
        f"{EVENT}/tickets/invalidate",
        "app",
        {"reference_code": "{reference_code}"},
        True,
    ),
]


def _document_accepts(openapi: OpenAPI, served_schema: dict, case: Agreement, response) -> bool:
    if case.path == SEARCH and not _search_rule_kept(served_schema, response.wsgi_request.GET):
        return False
    try:
        openapi.validate_request(DjangoOpenAPIRequest(response.wsgi_request))
    except Exception:  # openapi-core raises one of several errors, each naming the rule broken
        return False
    return True


def _search_rule_kept(served_schema: dict, query) -> bool:
    """The search's rule between its parameters, which its descriptions state in words
    (`SEARCH_RULE`): exactly one of them is sent."""
    params = _query_parameters(served_schema, SEARCH)
    assert all(p["description"].endswith(SEARCH_RULE) for p in params.values())
    return sum(name in query for name in params) == 1


JSON_IDS = ("ticket_type_id", "ticket_id")


@pytest.mark.parametrize("case", AGREEMENTS, ids=lambda c: c.name)
def test_document_and_server_agree_on_requests(case, world, openapi, served_schema):
    ticket = getattr(world, case.ticket)
    values = {
        "organizer_id": world.organizer_id,
        "event_id": world.event_id,
        "ticket_type_id": world.ticket_type_id,
        "ticket_id": ticket.id,
        "reference_code": ticket.reference_code,
    }
    url = API + _fill(case.path, values)
    params = {key: _fill(value, values) for key, value in case.params.items()}
    if case.method == "post":  # JSON ids as numbers, as the document says
        params = {k: int(v) if k in JSON_IDS and v else v for k, v in params.items()}
    client = world.clients[case.client]
    if case.method == "get":
        response = client.get(url, params)
    else:
        response = client.post(url, params, format="json")
    server_accepts = response.status_code not in (400,)
    assert response.status_code in (200, 400, 404, 409, 422), response.content
    assert (server_accepts, _document_accepts(openapi, served_schema, case, response)) == (
        case.valid,
        case.valid,
    ), (
        response.status_code,
        response.content[:300],
    )
