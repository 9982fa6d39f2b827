"""The check-in page installs as a gate's app (issue 42, CONTRACT §15): a web app manifest with
its icons, the browser asked to keep the device's storage, and the screen kept on."""

import io
import re

import pytest
from django.contrib.staticfiles import finders
from django.test import Client
from PIL import Image

from checkin.page_views import OFFLINE_ASSETS
from tests.factories import EventFactory, MembershipFactory, UserFactory
from tests.staff.driving import sign_in
from tests.support import CHROMIUM, CHROMIUM_ARGS, live_site

MANIFEST = "/checkin/manifest.webmanifest"
PORTS = range(8661, 8680)


def test_the_manifest_names_the_app_its_scope_and_icons_without_a_sign_in():
    response = Client().get(MANIFEST)

    assert response.status_code == 200
    assert response["Content-Type"] == "application/manifest+json"
    manifest = response.json()
    assert {key: manifest[key] for key in ("name", "short_name", "start_url", "scope")} == {
        "name": "Ticket check-in",
        "short_name": "Check-in",
        "start_url": "/checkin/",
        "scope": "/checkin/",
    }
    assert manifest["display"] == "standalone"
    assert [(i["sizes"], i["purpose"]) for i in manifest["icons"]] == [
        ("192x192", "any"),
        ("512x512", "any"),
        ("512x512", "maskable"),
    ]
    for icon in manifest["icons"]:
        path = finders.find(icon["src"].removeprefix("/static/"))
        with open(path, "rb") as handle:
            image = Image.open(io.BytesIO(handle.read()))
        assert image.format == "PNG"
        assert f"{image.width}x{image.height}" == icon["sizes"]


def test_the_manifest_speaks_the_browsers_language():
    manifest = Client().get(MANIFEST, HTTP_ACCEPT_LANGUAGE="th").json()
    assert (manifest["name"], manifest["short_name"]) == ("เช็คอินบัตร", "เช็คอิน")


@pytest.mark.django_db
def test_the_page_links_its_manifest_and_caches_its_device_script(client, organizer):
    staff = UserFactory(username="gate")
    MembershipFactory(user=staff, organizer=organizer, role="staff")
    client.force_login(staff)

    page = client.get("/checkin/").content.decode()

    assert f'<link rel="manifest" href="{MANIFEST}">' in page
    assert '<meta name="theme-color" content="#1f2a44">' in page
    assert re.search(r'<script src="/static/checkin_page/device\.js[^"]*" defer>', page)
    assert "checkin_page/device.js" in OFFLINE_ASSETS  # opens offline too
    worker = client.get("/checkin/worker.js").content.decode()
    assert "/static/checkin_page/device.js" in worker


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_chromium_reads_the_manifest_and_the_page_asks_for_storage_and_the_screen(organizer):
    staff = UserFactory(username="gate")
    staff.set_password("gate-pass-123")
    staff.save()
    MembershipFactory(user=staff, organizer=organizer, role="staff")
    EventFactory(organizer=organizer, title="Songkran Beats")

    from playwright.sync_api import sync_playwright

    for site in live_site(PORTS):
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page()
                sign_in(page, site)
                page.wait_for_function("document.documentElement.dataset.storage !== undefined")
                page.wait_for_function("document.documentElement.dataset.wakeLock !== undefined")
                asked = page.evaluate(
                    "[document.documentElement.dataset.storage,"
                    " document.documentElement.dataset.wakeLock]"
                )
                cdp = page.context.new_cdp_session(page)
                manifest = cdp.send("Page.getAppManifest")
            finally:
                browser.close()

    assert asked[0] in ("persisted", "best-effort")  # asked; the browser decides
    assert asked[1] in ("held", "refused")
    assert manifest["url"] == f"{site}{MANIFEST}"
    assert manifest["errors"] == []
    assert '"start_url": "/checkin/"' in manifest["data"]
