"""The API reference in a real browser: it renders with nothing fetched from outside this server,
and its Authorize button signs a user in (authorization code with PKCE) so that "Try it out"
calls the API with the user's token."""

import os
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.test.testcases import LiveServerThread
from pytest_django.live_server_helper import LiveServer

from devtools.demo import demo_bootstrap, docs_redirect_uri
from devtools.demo_people import USERS
from oauth_setup.models import Application
from tests.support import CHROMIUM, CHROMIUM_ARGS

pytestmark = pytest.mark.browser

DOCS = "/api/public/docs/"


@pytest.fixture
def docs_server():
    """A server thread on a free port of 127.0.0.1; the docs and the schema touch no database."""
    thread = LiveServerThread("127.0.0.1", StaticFilesHandler, port=0)
    thread.daemon = True
    thread.start()
    thread.is_ready.wait()
    if thread.error is not None:
        raise thread.error
    yield f"http://127.0.0.1:{thread.port}"
    thread.terminate()
    thread.join()


@pytest.fixture
def site_server(transactional_db):
    """The whole site (OAuth pages and API too) on a free port of 127.0.0.1."""
    server = LiveServer("127.0.0.1:0")
    yield server.url
    server.stop()


def test_swagger_ui_shows_every_operation_offline(docs_server):
    from playwright.sync_api import sync_playwright

    outside = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()

            def only_this_server(route):
                if route.request.url.startswith(docs_server):
                    route.continue_()
                else:
                    outside.append(route.request.url)
                    route.abort()

            page.route("**/*", only_this_server)
            page.goto(f"{docs_server}{DOCS}")
            page.wait_for_selector(".opblock", timeout=30_000)
            summaries = page.locator(".opblock-summary-path").all_inner_texts()
            body = page.inner_text("body")
            if os.environ.get("DOCS_SCREENSHOT"):
                page.screenshot(path=os.environ["DOCS_SCREENSHOT"])
        finally:
            browser.close()

    assert outside == []
    assert "Event Ticketing Public API" in body
    paths = {s.replace("\u200b", "") for s in summaries}
    assert "/api/public/organizers/{organizer_id}/events/{event_id}/tickets/search" in paths
    assert "/api/public/tickets/search" in paths
    assert len(summaries) >= 15


def test_swagger_ui_signs_the_demo_staff_in_and_tries_me(site_server):
    """Authorize → sign in as the demo staff → Allow → the docs hold a user token → GET /me."""
    demo = demo_bootstrap().as_dict()
    client = demo["organizers"][0]["application"]
    app = Application.objects.get(client_id=client["client_id"])
    assert docs_redirect_uri() in app.redirect_uris.split()  # the demo's, for `make run`
    # Redirect URIs match exactly, and this server's port is the OS's choice: register it here.
    redirect_uri = f"{site_server}{DOCS}oauth2-redirect.html"
    app.redirect_uris = f"{app.redirect_uris} {redirect_uri}"
    app.save()

    from playwright.sync_api import expect, sync_playwright

    authorize_requests = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context()
            context.on(
                "request",
                lambda r: authorize_requests.append(r.url) if "/oauth/authorize" in r.url else 0,
            )
            page = context.new_page()
            page.goto(f"{site_server}{DOCS}")
            page.click("button.authorize")
            user_token = page.locator(".auth-container", has_text="userToken (OAuth2")
            user_token.locator("input[data-name=clientId]").fill(client["client_id"])
            user_token.locator("input[data-name=clientSecret]").fill(client["client_secret"])
            # Swagger UI draws its own box over the (hidden) checkbox: click its label.
            scope = user_token.locator("input[data-value=public]")
            user_token.locator(f"label[for={scope.get_attribute('id')}]").click()
            expect(scope).to_be_checked()

            with page.expect_popup() as opened:
                user_token.locator("button.authorize").click()
            popup = opened.value
            popup.wait_for_url("**/oauth/login**")
            popup.fill("#id_username", "staff")
            popup.fill("#id_password", USERS["staff"]["password"])
            popup.click("button[type=submit]")
            popup.wait_for_url("**/oauth/authorize**")
            with popup.expect_event("close"):  # the redirect page hands the code over and closes
                popup.click("button[name=allow]")

            # Swagger UI exchanges the code itself; the scheme then shows as authorized.
            expect(user_token.locator("button", has_text="Logout")).to_be_visible()
            page.click(".modal-ux button.close-modal")

            me = page.locator("#operations-User-me_retrieve")
            me.locator(".opblock-summary").click()
            me.locator("button.try-out__btn").click()
            me.locator("button.execute").click()
            status = me.locator(".live-responses-table .response .response-col_status")
            expect(status).to_have_text("200")
            body = me.locator(
                ".live-responses-table .response .response-col_description"
            ).inner_text()
        finally:
            browser.close()

    first = parse_qs(urlsplit(authorize_requests[0]).query)
    assert first["redirect_uri"] == [redirect_uri]
    assert first["code_challenge_method"] == ["S256"] and len(first["code_challenge"][0]) == 43
    assert first["scope"] == ["public"]
    assert '"email": "staff@demo.example"' in body  # the demo staff's own profile
