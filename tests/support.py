"""Helpers every test package may import: API clients with real tokens, the browser's path,
the live site for browser tests."""

import secrets
import threading
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.core.servers.basehttp import ThreadedWSGIServer
from django.utils import timezone
from oauth2_provider.models import AccessToken
from pytest_django.live_server_helper import LiveServer
from rest_framework.test import APIClient

CHROMIUM = "/usr/bin/chromium"
# Headless Chromium as root on a closed network: no sandbox, and no background connections
# (they would be refused, many at a time).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def mint_token(*, application, user=None, scope="public", expires_in=7200) -> str:
    """A real access token row, as DOT's token endpoint would issue it."""
    raw = secrets.token_urlsafe(30)
    AccessToken.objects.create(
        token=raw,
        application=application,
        user=user,
        scope=scope,
        expires=timezone.now() + timedelta(seconds=expires_in),
    )
    return raw


class TokenClient(APIClient):
    """An API client that sends one bearer token with every request."""

    def __init__(self, token: str, **kwargs):
        super().__init__(**kwargs)
        self.token = token
        self.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")


class _OneRequestAtATime(ThreadedWSGIServer):
    """Django's threaded test server, running one request at a time through the site. With an
    in-memory SQLite database every request thread is handed the test's one connection, and a
    page's requests at once (an upload and a counts refresh) would share its transaction state;
    PostgreSQL gives each thread a connection of its own and keeps the threaded server."""

    def set_app(self, application):
        one = threading.Lock()

        def one_at_a_time(environ, start_response):
            with one:
                return application(environ, start_response)

        super().set_app(one_at_a_time)


def live_site(ports: range) -> Iterator[str]:
    """The whole site on 127.0.0.1 at the first free port of `ports` (each browser suite has
    its own range, so suites run side by side); yields its URL, for a fixture to yield."""
    last_error = None
    for port in ports:
        server = LiveServer(f"127.0.0.1:{port}", start=False)
        if server.thread.connections_override:
            server.thread.server_class = _OneRequestAtATime
        try:
            server.start()
        except OSError as exc:
            last_error = exc
            continue
        yield server.url
        server.stop()
        return
    pytest.fail(f"no free port in {ports}: {last_error}")
