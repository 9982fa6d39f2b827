"""Fixtures shared by every test: real DOT tokens of every caller kind, and API clients."""

import os
import shutil

import pytest
from django.conf import settings
from django.db import connection
from rest_framework.test import APIClient

from tests.factories import (
    ApplicationFactory,
    EventFactory,
    MembershipFactory,
    OrganizerFactory,
    TicketTypeFactory,
    UserFactory,
)
from tests.support import CHROMIUM, TokenClient, mint_token


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Keep the topology tests together; run what this machine can run, where CI
    (REQUIRE_ALL_TESTS) must be able to run everything.

    Tests marked `postgres` need row locks and real concurrency, which SQLite cannot show;
    tests marked `redis` need a cache shared between processes; tests marked `browser` need
    Chromium, and tests marked `node` Node.js.
    """
    for item in items:
        # One stack of fixed ports on this machine: under xdist (`--dist loadgroup`) every
        # topology test runs on the same worker, one after another.
        if "topology" in item.path.parts:
            item.add_marker(pytest.mark.xdist_group("topology"))
    missing = {}
    if connection.vendor != "postgresql":
        missing["postgres"] = "needs PostgreSQL: set DATABASE_URL (CI does)"
    if not settings.REDIS_URL:
        missing["redis"] = "needs Redis: set REDIS_URL (CI does)"
    if shutil.which("node") is None:
        missing["node"] = "needs Node.js (on the project's machines; Debian package nodejs)"
    if not os.path.exists(CHROMIUM):
        missing["browser"] = f"needs {CHROMIUM} (Debian package chromium; CI installs it)"
    if not missing:
        return
    if os.environ.get("REQUIRE_ALL_TESTS"):
        raise pytest.UsageError("REQUIRE_ALL_TESTS is set but: " + "; ".join(missing.values()))
    for item in items:
        for marker, reason in missing.items():
            if marker in item.keywords:
                item.add_marker(pytest.mark.skip(reason=reason))


def _clear_cache():
    from django.core.cache import cache

    from events.signing_keys import signing_keys_forget

    signing_keys_forget()  # per process: a rolled-back test's event ids come back

    # Only this run's keys: Redis may be shared with other processes (or xdist workers).
    if hasattr(cache, "delete_pattern"):
        cache.delete_pattern("*")
    else:
        cache.clear()


@pytest.fixture(autouse=True)
def _isolated_cache():
    """Rate-limit counters live in the cache; each test starts with none."""
    _clear_cache()
    yield
    _clear_cache()


@pytest.fixture
def api_client() -> APIClient:
    return APIClient()


@pytest.fixture
def organizer(db):
    return OrganizerFactory(name="Bangkok Live", slug="bangkok-live")


@pytest.fixture
def other_organizer(db):
    return OrganizerFactory(name="Chiang Mai Fest", slug="chiang-mai-fest")


@pytest.fixture
def application(organizer):
    return ApplicationFactory(organizer=organizer, name="Gate app")


@pytest.fixture
def other_application(other_organizer):
    return ApplicationFactory(organizer=other_organizer, name="Other gate app")


@pytest.fixture
def platform_application(db):
    return ApplicationFactory(organizer=None, name="Platform app")


@pytest.fixture
def member(organizer):
    """A user with role admin in `organizer`."""
    user = UserFactory(username="staff", full_name="Somchai Staff", email="staff@example.com")
    MembershipFactory(user=user, organizer=organizer, role="admin")
    return user


@pytest.fixture
def buyer(db):
    return UserFactory(username="buyer", full_name="Nok Buyer", email="buyer@example.com")


@pytest.fixture
def app_client(application) -> TokenClient:
    """Application token (client credentials) of `organizer`'s application."""
    return TokenClient(mint_token(application=application, scope="public"))


@pytest.fixture
def organizer_client(application, member) -> TokenClient:
    """User token with `public organizer`, through the organizer's app, of a member."""
    return TokenClient(mint_token(application=application, user=member, scope="public organizer"))


@pytest.fixture
def buyer_client(application, buyer) -> TokenClient:
    """User token with `public` only, of a buyer with no membership."""
    return TokenClient(mint_token(application=application, user=buyer, scope="public"))


@pytest.fixture
def event(organizer):
    return EventFactory(organizer=organizer, title="Songkran Beats")


@pytest.fixture
def ticket_type(event):
    return TicketTypeFactory(event=event, name="Regular", price=150000, quantity=1000)
