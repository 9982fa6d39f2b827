"""The authorization-code flow in a real headless Chromium: sign in, consent, code, token, /me."""

import os
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
import requests
from django.conf import settings

from tests.oauth.flow import REDIRECT_URI, authorize_url, live_server_on
from tests.support import CHROMIUM, CHROMIUM_ARGS

LIVE_SERVER_PORT = 8106
PHONE = {"width": 390, "height": 844}


@pytest.fixture
def live(transactional_db):
    with live_server_on(LIVE_SERVER_PORT) as server:
        yield server


@pytest.fixture
def screenshots() -> Path:
    folder = Path(settings.BASE_DIR) / "test-output"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.mark.browser
def test_authorization_code_flow_in_chromium(live, application, member, screenshots):
    from playwright.sync_api import sync_playwright

    start = live.url + authorize_url(application, scope="public organizer", state="st-42")
    callbacks: list[str] = []

    def callback(route):
        # Stands in for the client application at its registered redirect URI.
        callbacks.append(route.request.url)
        route.fulfill(status=200, content_type="text/html", body="<p>Callback received</p>")

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_context(viewport=PHONE).new_page()
            page.route(f"{REDIRECT_URI}**", callback)

            page.goto(start)
            assert urlparse(page.url).path == "/oauth/login"
            assert page.locator("h1").inner_text() == "Sign in"
            assert "Gate app" in page.locator("main").inner_text()
            page.fill("#id_username", "staff")
            page.fill("#id_password", "password")
            page.click("button:has-text('Sign in')")

            page.wait_for_url("**/oauth/authorize?**")
            consent = page.locator("main").inner_text()
            assert "Allow Gate app to use your account?" in consent
            assert "This application belongs to Bangkok Live." in consent
            assert "See your profile" in consent
            assert "check tickets in and create tickets" in consent
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
            page.screenshot(path=str(screenshots / "oauth-consent.png"), full_page=True)

            page.click("button:has-text('Allow')")
            page.wait_for_selector("text=Callback received")

            # A second request, denied this time.
            page.goto(live.url + authorize_url(application, state="st-43"))
            page.click("button:has-text('Deny')")
            page.wait_for_function("document.body.innerText.includes('Callback received')")
        finally:
            browser.close()

    assert len(callbacks) == 2
    allowed = parse_qs(urlparse(callbacks[0]).query)
    assert callbacks[0].startswith(REDIRECT_URI + "?")
    assert allowed["state"] == ["st-42"]
    assert parse_qs(urlparse(callbacks[1]).query) == {
        "error": ["access_denied"],
        "state": ["st-43"],
        "iss": [live.url],
    }

    token = requests.post(
        f"{live.url}/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": allowed["code"][0],
            "redirect_uri": REDIRECT_URI,
            "client_id": application.client_id,
            "client_secret": "s3cret",
        },
        timeout=10,
    )
    assert token.status_code == 200, token.text
    body = token.json()
    assert (body["token_type"], body["expires_in"], body["scope"]) == (
        "Bearer",
        7200,
        "public organizer",
    )
    me = requests.get(
        f"{live.url}/api/public/me",
        headers={"Authorization": f"Bearer {body['access_token']}"},
        timeout=10,
    )
    assert me.status_code == 200
    assert me.json()["id"] == member.id
    assert os.path.getsize(screenshots / "oauth-consent.png") > 10_000
