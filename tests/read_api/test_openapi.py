"""The OpenAPI document (CONTRACT §1): served as YAML or JSON, valid, and true to the code.

Real responses of every endpoint, successes and errors, are validated against the served
document with openapi-core, and every route under /api/public must appear in it with every
method, and be exercised here with at least one success: a new endpoint without cases fails.
"""

import json
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest
import yaml
from django.db import OperationalError
from django.test import override_settings
from django.urls import URLPattern, URLResolver, get_resolver
from openapi_core import OpenAPI
from openapi_core.contrib.django import DjangoOpenAPIRequest, DjangoOpenAPIResponse
from openapi_spec_validator import validate
from rest_framework.test import APIClient

from tests.conftest import TokenClient, mint_token
from tests.factories import (
    CheckInTypeFactory,
    EventFactory,
    OrderFactory,
    TicketFactory,
    TicketTypeFactory,
)

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
            elif isinstance(pattern, URLPattern):
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
    assert "cdn" not in html.lower()
    asset = api_client.get(f"{API}/docs/assets/swagger-ui-bundle.js")
    assert asset.status_code == 200
    assert api_client.get(f"{API}/docs/assets/..%2Fswagger-ui.css").status_code == 404


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
    }
    url = API + _fill(case.path, values)
    params = {key: _fill(value, values) for key, value in case.params.items()}
    client = world.clients[case.client]
    if case.method == "get":
        return client.get(url, params)
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
