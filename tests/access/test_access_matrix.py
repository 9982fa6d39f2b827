"""CONTRACT §3 as a table: every API endpoint × every kind of caller → status and `error`.

To add an endpoint, append an `Endpoint` to `ENDPOINTS` with one of the expectation rows
below (or a row of its own). Paths use `{o}` (the organizer), `{other_o}`, `{e}` (its event),
`{other_e}` (the other organizer's event), `{t}` (an active ticket of the buyer), `{used}` (a
used ticket), `{ref}` (the active ticket's reference code) and `{w}` (a webhook endpoint of
the organizer).
"""

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from rest_framework.test import APIClient

from tests.factories import (
    ApplicationFactory,
    EventFactory,
    MembershipFactory,
    OrderFactory,
    OrganizerFactory,
    TicketFactory,
    TicketTypeFactory,
    UserFactory,
    WebhookEndpointFactory,
)
from tests.oauth.flow import stored_token
from tests.support import mint_token
from tickets.models import Ticket

CALLERS = (
    "no_token",
    "expired",
    "revoked",
    "app_own",  # client credentials of the path organizer's application
    "app_other",  # ... of another organizer's application
    "app_platform",  # ... of a platform application (no owner)
    "user_public",  # a buyer, scope public, through the organizer's application
    "user_member",  # an admin of the organizer, scope public organizer
    "user_nonmember",  # a user of no organizer, scope public organizer
    "user_other_app",  # the member again, through another organizer's application
)

OK = (200, None)
INVALID_TOKEN = (401, "invalid_token")
MISMATCH = (401, "organizer_mismatch")
SCOPE = (403, "insufficient_scope")
NOT_OWNED = (403, "application_not_owned")
NOT_MEMBER = (403, "not_organizer_member")
USER_REQUIRED = (403, "user_token_required")
NOT_FOUND = (404, "not_found")

_NO_VALID_TOKEN = dict.fromkeys(("no_token", "expired", "revoked"), INVALID_TOKEN)
_APP_TOKENS = ("app_own", "app_other", "app_platform")
_USER_TOKENS = ("user_public", "user_member", "user_nonmember", "user_other_app")

# Expectation rows, one per rule of CONTRACT §3.
NO_AUTH = dict.fromkeys(CALLERS, OK)
ANY_TOKEN = {**_NO_VALID_TOKEN, **dict.fromkeys(_APP_TOKENS + _USER_TOKENS, OK)}
USER_ONLY = {
    **_NO_VALID_TOKEN,
    **dict.fromkeys(_APP_TOKENS, USER_REQUIRED),
    **dict.fromkeys(_USER_TOKENS, OK),
}
USER_RESOURCE = {**USER_ONLY, "user_other_app": MISMATCH}
ORGANIZER_RESOURCE = {
    **_NO_VALID_TOKEN,
    "app_own": OK,
    "app_other": NOT_OWNED,
    "app_platform": NOT_OWNED,
    "user_public": SCOPE,
    "user_member": OK,
    "user_nonmember": NOT_MEMBER,
    "user_other_app": MISMATCH,
}
ORGANIZER_USER_RESOURCE = {**ORGANIZER_RESOURCE, **dict.fromkeys(_APP_TOKENS, USER_REQUIRED)}
# `GET /tickets/search`: no organizer in the path; what is out of reach is a 404 (§5).
TICKET_SEARCH = {
    **_NO_VALID_TOKEN,
    "app_own": OK,
    "app_other": NOT_FOUND,
    "app_platform": NOT_OWNED,
    "user_public": OK,  # the buyer's own ticket
    "user_member": OK,
    "user_nonmember": NOT_FOUND,
    "user_other_app": NOT_FOUND,  # that token acts for the other organizer only
}
# Step 4 (unknown organizer) comes after the token and scope checks, before ownership.
UNKNOWN_ORGANIZER = {
    **ORGANIZER_RESOURCE,
    **dict.fromkeys(("app_own", "app_other", "app_platform"), NOT_FOUND),
    **dict.fromkeys(("user_member", "user_nonmember", "user_other_app"), NOT_FOUND),
}
UNKNOWN_ORGANIZER_USER_LIST = {
    **USER_RESOURCE,
    **dict.fromkeys(_USER_TOKENS, NOT_FOUND),
}
# Step 8 (event of another organizer) comes after every caller check.
FOREIGN_EVENT = {**ORGANIZER_RESOURCE, "app_own": NOT_FOUND, "user_member": NOT_FOUND}
# Webhook management (§13): a person with role owner or admin ("user_member" is an admin).
WEBHOOK_CREATE = {**ORGANIZER_USER_RESOURCE, "user_member": (201, None)}


@dataclass(frozen=True)
class Endpoint:
    name: str
    method: str
    path: str
    expected: dict[str, tuple[int, str | None]]
    body: Callable[["World"], dict] | None = None
    success_status: int = 200
    notes: dict = field(default_factory=dict)


def _create_body(world: "World") -> dict:
    return {
        "ticket_type_id": world.ticket_type.id,
        "firstname": "Ann",
        "lastname": "Lee",
        "email": "ann@example.com",
        "phone": "0812345678",
    }


def _empty_body(world: "World") -> dict:
    return {}


EVENT = "/api/public/organizers/{o}/events/{e}"
ENDPOINTS = [
    Endpoint("info", "GET", "/api/public/info", NO_AUTH),
    Endpoint("me", "GET", "/api/public/me", USER_ONLY),
    Endpoint("organizers", "GET", "/api/public/organizers", ANY_TOKEN),
    Endpoint("user_tickets", "GET", "/api/public/organizers/{o}/tickets", USER_RESOURCE),
    Endpoint("user_orders", "GET", "/api/public/organizers/{o}/orders", USER_RESOURCE),
    Endpoint(
        "tickets_search",
        "GET",
        "/api/public/tickets/search?event_id={e}&reference_code={ref}",
        TICKET_SEARCH,
    ),
    Endpoint("events_list", "GET", "/api/public/organizers/{o}/events", ORGANIZER_RESOURCE),
    Endpoint("event_detail", "GET", EVENT, ORGANIZER_RESOURCE),
    Endpoint("event_tickets", "GET", EVENT + "/tickets", ORGANIZER_RESOURCE),
    Endpoint(
        "event_tickets_search",
        "GET",
        EVENT + "/tickets/search?reference_code={ref}",
        ORGANIZER_RESOURCE,
    ),
    Endpoint("check_in_types", "GET", EVENT + "/check_in_types", ORGANIZER_RESOURCE),
    Endpoint("ticket_create", "POST", EVENT + "/tickets", ORGANIZER_USER_RESOURCE, _create_body),
    Endpoint("checkin", "POST", EVENT + "/tickets/{t}/checkin", ORGANIZER_RESOURCE, _empty_body),
    Endpoint("renew", "POST", EVENT + "/tickets/{used}/renew", ORGANIZER_RESOURCE, _empty_body),
    Endpoint(
        "scan_checkin",
        "POST",
        EVENT + "/tickets/checkin",
        ORGANIZER_RESOURCE,
        lambda world: {"reference_code": world.ticket.reference_code.lower()},
    ),
    Endpoint(
        "scan_renew",
        "POST",
        EVENT + "/tickets/renew",
        ORGANIZER_RESOURCE,
        lambda world: {"ticket_id": world.used.id},
    ),
    Endpoint(
        "invalidate",
        "POST",
        EVENT + "/tickets/invalidate",
        ORGANIZER_RESOURCE,
        lambda world: {"ticket_id": world.ticket.id, "reason": "Refunded"},
    ),
    Endpoint("ticket_sync", "GET", EVENT + "/tickets/sync", ORGANIZER_RESOURCE),
    Endpoint(
        "checkin_batch",
        "POST",
        EVENT + "/checkins",
        ORGANIZER_RESOURCE,
        lambda world: {
            "scans": [
                {
                    "id": "matrix-scan-1",
                    "ticket_id": world.ticket.id,
                    "used_at": "2026-01-10T12:00Z",
                }
            ]
        },
    ),
    Endpoint("check_in_stats", "GET", EVENT + "/check_in_stats", ORGANIZER_RESOURCE),
    Endpoint(
        "ticket_sync_of_other_organizers_event",
        "GET",
        "/api/public/organizers/{o}/events/{other_e}/tickets/sync",
        FOREIGN_EVENT,
    ),
    Endpoint(
        "checkin_batch_in_other_organizers_event",
        "POST",
        "/api/public/organizers/{o}/events/{other_e}/checkins",
        FOREIGN_EVENT,
        lambda world: {
            "scans": [
                {
                    "id": "matrix-scan-1",
                    "ticket_id": world.other_ticket.id,
                    "used_at": "2026-01-10T12:00Z",
                }
            ]
        },
    ),
    Endpoint(
        "check_in_stats_of_other_organizers_event",
        "GET",
        "/api/public/organizers/{o}/events/{other_e}/check_in_stats",
        FOREIGN_EVENT,
    ),
    # The order of the checks: unknown organizer (step 4), foreign event (step 8).
    Endpoint(
        "events_list_unknown_organizer",
        "GET",
        "/api/public/organizers/2147483647/events",
        UNKNOWN_ORGANIZER,
    ),
    Endpoint(
        "user_tickets_unknown_organizer",
        "GET",
        "/api/public/organizers/2147483647/tickets",
        UNKNOWN_ORGANIZER_USER_LIST,
    ),
    Endpoint(
        "event_detail_of_other_organizer",
        "GET",
        "/api/public/organizers/{o}/events/{other_e}",
        FOREIGN_EVENT,
    ),
    Endpoint(
        "checkin_of_other_organizers_ticket",
        "POST",
        "/api/public/organizers/{o}/events/{e}/tickets/{other_t}/checkin",
        FOREIGN_EVENT,
        _empty_body,
    ),
    Endpoint(
        "scan_checkin_in_other_organizers_event",
        "POST",
        "/api/public/organizers/{o}/events/{other_e}/tickets/checkin",
        FOREIGN_EVENT,
        lambda world: {"reference_code": world.other_ticket.reference_code},
    ),
    Endpoint(
        "scan_checkin_of_other_organizers_code",
        "POST",
        "/api/public/organizers/{o}/events/{e}/tickets/checkin",
        FOREIGN_EVENT,
        lambda world: {"reference_code": world.other_ticket.reference_code},
    ),
    Endpoint("webhooks", "GET", "/api/public/organizers/{o}/webhooks", ORGANIZER_USER_RESOURCE),
    Endpoint(
        "webhook_create",
        "POST",
        "/api/public/organizers/{o}/webhooks",
        WEBHOOK_CREATE,
        lambda world: {"url": "https://93.184.215.14/hooks", "event_types": ["*"]},
    ),
    Endpoint(
        "webhook_delete",
        "DELETE",
        "/api/public/organizers/{o}/webhooks/{w}",
        ORGANIZER_USER_RESOURCE,
    ),
    Endpoint(
        "webhook_test",
        "POST",
        "/api/public/organizers/{o}/webhooks/{w}/test",
        ORGANIZER_USER_RESOURCE,
        _empty_body,
    ),
]


class World:
    """Two organizers with their applications, a platform application, people, tickets."""

    def __init__(self):
        self.organizer = OrganizerFactory(name="Bangkok Live", slug="bangkok-live")
        self.other_organizer = OrganizerFactory(name="Chiang Mai Fest", slug="chiang-mai-fest")
        self.application = ApplicationFactory(organizer=self.organizer)
        self.other_application = ApplicationFactory(organizer=self.other_organizer)
        self.platform_application = ApplicationFactory(organizer=None)
        self.member = UserFactory(username="staff")
        MembershipFactory(user=self.member, organizer=self.organizer, role="admin")
        self.buyer = UserFactory(username="buyer", email="buyer@example.com")
        self.outsider = UserFactory(username="outsider")

        self.event = EventFactory(organizer=self.organizer)
        self.ticket_type = TicketTypeFactory(event=self.event, quantity=100)
        order = OrderFactory(event=self.event, buyer=self.buyer, buyer_email=self.buyer.email)
        self.ticket = TicketFactory(
            event=self.event, ticket_type=self.ticket_type, order=order, email=self.buyer.email
        )
        self.used = TicketFactory(
            event=self.event, ticket_type=self.ticket_type, status=Ticket.Status.USED
        )
        self.other_event = EventFactory(organizer=self.other_organizer)
        self.other_ticket = TicketFactory(event=self.other_event)
        self.webhook = WebhookEndpointFactory(organizer=self.organizer)

    def path(self, template: str) -> str:
        return template.format(
            o=self.organizer.id,
            other_o=self.other_organizer.id,
            e=self.event.id,
            other_e=self.other_event.id,
            t=self.ticket.id,
            used=self.used.id,
            other_t=self.other_ticket.id,
            ref=self.ticket.reference_code,
            w=self.webhook.id,
        )

    def token(self, caller: str) -> str | None:
        if caller == "no_token":
            return None
        if caller == "expired":
            return mint_token(
                application=self.application,
                user=self.member,
                scope="public organizer",
                expires_in=-60,
            )
        if caller == "revoked":
            raw = mint_token(
                application=self.application, user=self.member, scope="public organizer"
            )
            stored_token(raw).revoke()
            return raw
        apps = {
            "app_own": self.application,
            "app_other": self.other_application,
            "app_platform": self.platform_application,
        }
        if caller in apps:
            return mint_token(application=apps[caller], scope="public")
        user, application, scope = {
            "user_public": (self.buyer, self.application, "public"),
            "user_member": (self.member, self.application, "public organizer"),
            "user_nonmember": (self.outsider, self.application, "public organizer"),
            "user_other_app": (self.member, self.other_application, "public organizer"),
        }[caller]
        return mint_token(application=application, user=user, scope=scope)


CELLS = [
    pytest.param(endpoint, caller, id=f"{endpoint.name}-{caller}")
    for endpoint in ENDPOINTS
    for caller in CALLERS
]


@pytest.mark.django_db
@pytest.mark.parametrize("endpoint, caller", CELLS)
def test_access_matrix(endpoint: Endpoint, caller: str):
    world = World()
    client = APIClient()
    token = world.token(caller)
    if token is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    path = world.path(endpoint.path)

    if endpoint.method == "GET":
        response = client.get(path)
    elif endpoint.method == "DELETE":
        response = client.delete(path)
    else:
        response = client.post(path, endpoint.body(world), format="json")

    status, error = endpoint.expected[caller]
    body = response.json()
    assert (response.status_code, body.get("error")) == (status, error), body
    if status == 200 and endpoint.name != "me":
        assert body["success"] is True
    if status == 401:
        sent = 'Bearer error="invalid_token"' if token else "Bearer"
        assert response["WWW-Authenticate"] == sent
    if error == "insufficient_scope":
        assert response["WWW-Authenticate"].startswith('Bearer error="insufficient_scope"')


def test_matrix_covers_every_api_route():
    """A new route under /api/public fails here until the table has a row for it."""
    from django.urls import get_resolver

    covered = {endpoint.path.split("?")[0] for endpoint in ENDPOINTS}
    normalized = {
        path.replace("{o}", "<int:organizer_id>")
        .replace("{e}", "<int:event_id>")
        .replace("{t}", "<int:ticket_id>")
        .replace("{used}", "<int:ticket_id>")
        .replace("{w}", "<int:webhook_id>")
        for path in covered
    }

    def routes(resolver, prefix=""):
        for pattern in resolver.url_patterns:
            route = prefix + str(pattern.pattern).strip("^$")
            if hasattr(pattern, "url_patterns"):
                yield from routes(pattern, route)
            elif pattern.name != "api-unknown-route":  # the 404 for every other path
                yield "/" + route

    api_routes = {
        route
        for route in routes(get_resolver())
        if route.startswith("/api/public/")
        and not route.startswith(("/api/public/schema", "/api/public/docs"))
    }
    assert api_routes - normalized == set()
