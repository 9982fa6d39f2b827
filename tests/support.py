"""Helpers every test package may import: API clients with real tokens, the browser's path."""

import secrets
from datetime import timedelta

from django.utils import timezone
from oauth2_provider.models import AccessToken
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
