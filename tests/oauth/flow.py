"""Helpers that walk the authorization-code flow the way a browser and a client do."""

import base64
import hashlib
import html as html_lib
import re
import secrets
from contextlib import contextmanager
from urllib.parse import parse_qs, urlencode, urlparse

from django.test import Client
from oauth2_provider.models import AccessToken
from pytest_django.live_server_helper import LiveServer

REDIRECT_URI = "http://127.0.0.1:8765/callback"
_CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
_HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)"')


def authorize_url(application, *, scope="public", state="xyz", **extra) -> str:
    params = {
        "client_id": application.client_id,
        "redirect_uri": REDIRECT_URI,
        "response_type": "code",
        "scope": scope,
        "state": state,
        **extra,
    }
    return "/oauth/authorize?" + urlencode(params)


def csrf_token(html: str) -> str:
    match = _CSRF.search(html)
    assert match, "the page has no CSRF token"
    return match.group(1)


def hidden_fields(html: str) -> dict[str, str]:
    return {name: html_lib.unescape(value) for name, value in _HIDDEN.findall(html)}


def query_of(url: str) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlparse(url).query).items()}


def browser(user=None) -> Client:
    """A browser-like client: CSRF enforced, optionally already signed in."""
    client = Client(enforce_csrf_checks=True)
    if user is not None:
        client.force_login(user)
    return client


def consent(client: Client, application, *, allow=True, **authorize_params) -> dict[str, str]:
    """Open the consent page, press Allow or Deny; the redirect's query parameters."""
    page = client.get(authorize_url(application, **authorize_params))
    assert page.status_code == 200, page.content[:500]
    html = page.content.decode()
    data = {**hidden_fields(html), "csrfmiddlewaretoken": csrf_token(html)}
    data.pop("next", None)
    if allow:
        data["allow"] = "on"
    else:
        data["deny"] = "1"
    answer = client.post("/oauth/authorize", data)
    assert answer.status_code == 302, answer.content[:500]
    assert answer["Location"].startswith(REDIRECT_URI + "?")
    return query_of(answer["Location"])


def exchange_code(application, code, *, secret="s3cret", **extra):
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT_URI,
        "client_id": application.client_id,
        **extra,
    }
    if secret is not None:
        data["client_secret"] = secret
    # A parameter given as None is left out.
    return Client().post("/oauth/token", {k: v for k, v in data.items() if v is not None})


def refresh(application, refresh_token, *, secret="s3cret"):
    return Client().post(
        "/oauth/token",
        {
            "grant_type": "refresh_token",
            "refresh_token": refresh_token,
            "client_id": application.client_id,
            "client_secret": secret,
        },
    )


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    challenge = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    return verifier, challenge


@contextmanager
def live_server_on(port: int):
    """pytest-django's live server, on a port of this suite's own range."""
    server = LiveServer(f"127.0.0.1:{port}")
    server._live_server_modified_settings.enable()
    try:
        yield server
    finally:
        server._live_server_modified_settings.disable()
        server.stop()


def stored_token(raw: str) -> AccessToken:
    """The access token row of a token value: rows keep only its SHA-256 (RFC 9700 §4)."""
    return AccessToken.objects.get(token_checksum=hashlib.sha256(raw.encode()).hexdigest())
