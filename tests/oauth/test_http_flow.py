"""The authorization-code flow over real HTTP, as an existing confidential integration does it:
no PKCE, the secret in the form body, the user's browser played by a `requests` session.
"""

import html as html_lib
import re

import pytest
import requests

from tests.oauth.flow import REDIRECT_URI, authorize_url, live_server_on, query_of

PORT = 8107


@pytest.fixture
def live(transactional_db):
    with live_server_on(PORT) as server:
        yield server


def _form(page: str) -> dict[str, str]:
    """The hidden inputs of the page's first form, CSRF token included."""
    first_form = page.split("</form>")[0]
    fields = re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', first_form)
    return {name: html_lib.unescape(value) for name, value in fields}


def test_authorization_code_over_http_without_pkce(live, application, member):
    browser = requests.Session()
    start = live.url + authorize_url(application, scope="public organizer", state="abc")

    login = browser.get(start, timeout=10)
    assert login.status_code == 200
    assert login.url.startswith(f"{live.url}/oauth/login")
    signed_in = browser.post(
        login.url,
        data={**_form(login.text), "username": "staff", "password": "password"},
        headers={"Referer": login.url},
        timeout=10,
    )
    assert signed_in.status_code == 200
    assert signed_in.url == start
    assert 'Allow <span class="app">Gate app</span>' in signed_in.text

    allowed = browser.post(
        start,
        data={**_form(signed_in.text), "allow": "on"},
        headers={"Referer": start},
        allow_redirects=False,
        timeout=10,
    )
    assert allowed.status_code == 302
    callback = allowed.headers["Location"]
    assert callback.startswith(REDIRECT_URI + "?")
    params = query_of(callback)
    assert params["state"] == "abc"

    integration = requests.Session()  # the client's server, which never saw the browser
    token = integration.post(
        f"{live.url}/oauth/token",
        data={
            "client_id": application.client_id,
            "client_secret": "s3cret",
            "code": params["code"],
            "redirect_uri": REDIRECT_URI,
            "grant_type": "authorization_code",
        },
        timeout=10,
    )
    assert token.status_code == 200, token.text
    body = token.json()
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] == 7200
    assert body["scope"] == "public organizer"
    assert isinstance(body["created_at"], int)
    assert body["refresh_token"]

    me = integration.get(
        f"{live.url}/api/public/me", params={"access_token": body["access_token"]}, timeout=10
    )
    assert me.status_code == 200
    assert me.json()["id"] == member.id

    refreshed = integration.post(
        f"{live.url}/oauth/token",
        data={
            "client_id": application.client_id,
            "client_secret": "s3cret",
            "refresh_token": body["refresh_token"],
            "grant_type": "refresh_token",
        },
        timeout=10,
    )
    assert refreshed.status_code == 200
    assert refreshed.json()["refresh_token"] != body["refresh_token"]
