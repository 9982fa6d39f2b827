"""The balancer of deploy/topology names each client to the app hosts: per-address limits
behind it count clients, not the balancer, and no client can name another (CONTRACT §9)."""

import base64
import stat
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from tests.factories import ApplicationFactory
from tests.oauth.support import wait_for_fresh_window

from .stack import Stack

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

STRANGER, HONEST = "127.0.0.2", "127.0.0.3"


@pytest.fixture(scope="module")
def stack(django_db_setup, django_db_blocker):
    """The topology without its replica, which nothing here reads."""
    topology = Stack(connection.settings_dict["NAME"], settings.REDIS_URL, replica=False)
    try:
        topology.up()
        yield topology
    finally:
        topology.down()


def _token(stack: Stack, application, secret: str, *, source: str, forwarded=None) -> int:
    credentials = base64.b64encode(f"{application.client_id}:{secret}".encode()).decode()
    headers = {"Authorization": f"Basic {credentials}"}
    if forwarded is not None:
        headers["X-Forwarded-For"] = forwarded
    return stack.post_form(
        "/oauth/token", {"grant_type": "client_credentials"}, source=source, headers=headers
    )


def test_a_strangers_wrong_secrets_through_the_balancer_refuse_only_the_stranger(stack):
    application = ApplicationFactory()
    wait_for_fresh_window(STRANGER, period=15 * 60)
    # The stranger also names the honest client in X-Forwarded-For: the balancer replaces it.
    statuses = [
        _token(stack, application, "guess", source=STRANGER, forwarded=HONEST) for _ in range(11)
    ]
    assert statuses == [401] * 10 + [429]

    assert _token(stack, application, "s3cret", source=HONEST) == 200
    assert _token(stack, application, "s3cret", source=STRANGER, forwarded=HONEST) == 429


def test_the_file_holding_the_secret_key_is_its_owners_alone(stack):
    env = Path(stack.env["TOPOLOGY_DIR"]) / "env"
    assert "\nSECRET_KEY=" in env.read_text()
    assert stat.S_IMODE(env.stat().st_mode) == 0o600
