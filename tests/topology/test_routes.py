"""Every URL pattern and where its reads go when replicas are set (ticketing.db_routing)."""

from django.conf import settings
from django.urls import URLPattern, URLResolver, get_resolver

from ticketing.db_routing import REPLICA_ROUTES, ReplicaRouter

# Name → where a GET reads from. Every other method, and every admin page, reads the primary.
EXPECTED = {
    "healthz": "primary",
    "oauth2_provider:authorize": "primary",
    "oauth2_provider:token": "primary",
    "oauth2_provider:revoke-token": "primary",
    "oauth2_provider:introspect": "primary",
    "oauth2_provider:oauth-server-metadata": "primary",
    "login": "primary",
    "logout": "primary",
    "me": "primary",
    "info": "primary",
    "organizers": "primary",  # memberships: always the primary's
    "organizer-events": "replica",
    "event-detail": "replica",
    "event-check-in-types": "replica",
    "event-tickets": "replica",
    "event-ticket-search": "replica",
    "ticket-scan-checkin": "primary",
    "ticket-scan-renew": "primary",
    "ticket-sync": "replica",
    "checkin-batch": "primary",
    "check-in-stats": "replica",
    "ticket-checkin": "primary",
    "ticket-renew": "primary",
    "ticket-invalidate": "primary",
    "user-tickets": "replica",
    "user-orders": "replica",
    "ticket-search": "replica",
    "webhooks": "primary",
    "webhook": "primary",
    "webhook-test": "primary",
    "api-schema": "primary",
    "api-docs": "primary",
    "api-docs-asset": "primary",
    "api-docs-oauth2-redirect": "primary",
    "api-unknown-route": "primary",
    "ticket-page": "replica",
    "ticket-page-qr-svg": "replica",
    "ticket-page-qr-png": "replica",
    "ticket-page-ics": "primary",
    "ticket-page-pdf": "primary",
    "ticket-page-pkpass": "primary",
    "metrics": "primary",
    "checkin_page:page": "primary",
    "checkin_page:token": "primary",
    "checkin_page:worker": "primary",
    "checkin_page:manifest": "primary",
    "checkin_page:last_check_in": "primary",
}


def _patterns(patterns, prefix="", namespace=None):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            inner = pattern.namespace or namespace
            if pattern.namespace and namespace:
                inner = f"{namespace}:{pattern.namespace}"
            yield from _patterns(pattern.url_patterns, prefix + str(pattern.pattern), inner)
        elif isinstance(pattern, URLPattern):
            name = f"{namespace}:{pattern.name}" if namespace and pattern.name else pattern.name
            yield prefix + str(pattern.pattern), name


def test_every_url_pattern_has_its_route():
    routes = {}
    for path, name in _patterns(get_resolver().url_patterns):
        if path.startswith("admin/"):
            assert name not in REPLICA_ROUTES  # staff edit what they read: the primary
            continue
        assert name, f"{path} has no name: the router marks routes by name"
        routes[name] = "replica" if name in REPLICA_ROUTES else "primary"
    assert routes == EXPECTED
    assert set(EXPECTED) >= REPLICA_ROUTES


def test_router_pins_access_rows_and_writes_to_the_primary():
    from django.apps import apps

    from ticketing import db_routing

    router = ReplicaRouter()
    token = db_routing.reading_from("replica1")
    try:
        assert router.db_for_read(apps.get_model("tickets", "Ticket")) == "replica1"
        assert router.db_for_read(apps.get_model("events", "Event")) == "replica1"
        for label in ("oauth2_provider.AccessToken", "accounts.User", "organizers.Membership"):
            assert router.db_for_read(apps.get_model(label)) == "default"
        assert router.db_for_write(apps.get_model("tickets", "Ticket")) == "default"
    finally:
        db_routing.stop_reading(token)
    assert router.db_for_read(apps.get_model("tickets", "Ticket")) == "default"
    assert router.allow_migrate("replica1", "tickets") is False


def test_without_replica_settings_nothing_changes():
    """CI's suite runs with DATABASE_URL only: one database, no router, no middleware."""
    assert list(settings.DATABASES) == ["default"]
    assert settings.DATABASE_ROUTERS == []
    assert "ticketing.replica_middleware.ReplicaReadMiddleware" not in settings.MIDDLEWARE
