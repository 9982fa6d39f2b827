"""The API reference renders in a real browser with nothing fetched from outside this server."""

import os

import pytest
from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.test.testcases import LiveServerThread

from tests.conftest import CHROMIUM, CHROMIUM_ARGS

pytestmark = pytest.mark.browser

PORTS = range(8201, 8220)


@pytest.fixture
def docs_server():
    """A server thread on 127.0.0.1; the docs and the schema touch no database."""
    for port in PORTS:
        thread = LiveServerThread("127.0.0.1", StaticFilesHandler, port=port)
        thread.daemon = True
        thread.start()
        thread.is_ready.wait()
        if thread.error is None:
            break
        thread.join()
    else:
        pytest.fail(f"no free port in {PORTS}")
    yield f"http://127.0.0.1:{thread.port}"
    thread.terminate()
    thread.join()


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
            page.goto(f"{docs_server}/api/public/docs/")
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
