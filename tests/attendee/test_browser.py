"""The ticket page and the ticket email as a phone's browser shows them (headless Chromium)."""

from contextlib import contextmanager
from pathlib import Path

import pytest
from django.core import mail

from tests.support import CHROMIUM, CHROMIUM_ARGS, live_site
from tickets.links import ticket_page_path
from tickets.notifications import ticket_email_send

from .helpers import qr_signed_references, ticket_songkran

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PORTS = range(8441, 8460)
OUTPUT = Path(__file__).resolve().parents[2] / "test-output"
PHONE = {"width": 390, "height": 844}
MIN_QR_CSS_PX = 240


@pytest.fixture
def site(transactional_db):
    """The whole site on 127.0.0.1, on the first free port of this suite's range."""
    yield from live_site(PORTS)


@contextmanager
def chromium():
    """Headless Chromium. Playwright's sync API runs an event loop in this thread, where
    Django refuses database calls: tests write their data before opening it."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def test_ticket_page_on_a_phone_shows_a_scannable_qr_without_scripts(site, organizer):
    url = f"{site}{ticket_page_path(ticket_songkran(organizer))}"
    OUTPUT.mkdir(exist_ok=True)
    console, requested = [], []
    with chromium() as browser:
        context = browser.new_context(
            viewport=PHONE, device_scale_factor=2, is_mobile=True, java_script_enabled=False
        )
        page = context.new_page()
        page.on("console", lambda message: console.append(message.text))
        page.on("request", lambda request: requested.append(request.url))

        page.goto(url, wait_until="load")  # the QR image has loaded too
        page.screenshot(path=str(OUTPUT / "ticket_page_phone.png"))

        qr = page.locator("#qr")
        box = qr.bounding_box()
        natural_width = qr.evaluate("image => image.complete && image.naturalWidth")
        # What the camera at the gate sees: the code, read back from the rendered pixels.
        qr_pixels = qr.screenshot()
        code = page.locator("#reference-code")
        code_text, code_visible = code.inner_text(), code.is_visible()
        max_width = page.locator("main").evaluate("m => getComputedStyle(m).maxWidth")

    assert box["width"] >= MIN_QR_CSS_PX and box["height"] >= MIN_QR_CSS_PX
    assert box["x"] >= 0 and box["y"] >= 0
    assert box["x"] + box["width"] <= PHONE["width"]
    assert box["y"] + box["height"] <= PHONE["height"]
    assert natural_width > 0
    assert qr_signed_references(qr_pixels) == ["ABCD2345"]
    assert (code_text, code_visible) == ("ABCD2345", True)
    # The inline stylesheet applied (the policy allows it by hash), nothing was refused.
    assert max_width == "480px"
    assert not [text for text in console if "Content Security Policy" in text]
    assert requested and all(u.startswith(site) for u in requested)
    assert (OUTPUT / "ticket_page_phone.png").stat().st_size > 10_000


def test_language_links_work_without_scripts(site, organizer):
    url = f"{site}{ticket_page_path(ticket_songkran(organizer))}"
    with chromium() as browser:
        context = browser.new_context(viewport=PHONE, java_script_enabled=False, locale="en-US")
        page = context.new_page()
        page.goto(url)
        english = page.locator("#state").inner_text()

        page.click("a[hreflang=th]")
        page.wait_for_url("**?lang=th")
        thai = page.locator("#state").inner_text()
        lang = page.locator("html").get_attribute("lang")

    assert english == "Valid: show this code at the entrance."
    assert (thai, lang) == ("ใช้ได้: แสดงรหัสนี้ที่ทางเข้า", "th")


def test_ticket_page_prints_the_qr_without_the_language_links(site, organizer):
    url = f"{site}{ticket_page_path(ticket_songkran(organizer))}"
    OUTPUT.mkdir(exist_ok=True)
    with chromium() as browser:
        page = browser.new_page(viewport=PHONE)
        page.goto(url, wait_until="load")
        page.emulate_media(media="print")
        nav_hidden, qr_visible = page.locator("nav").is_hidden(), page.locator("#qr").is_visible()
        qr_width = page.locator("#qr").bounding_box()["width"]
        pdf = page.pdf(path=str(OUTPUT / "ticket_page.pdf"), format="A4")

    assert (nav_hidden, qr_visible) == (True, True)
    assert 200 <= qr_width <= 240  # 6 cm on paper
    assert pdf.startswith(b"%PDF")


def test_email_html_shows_its_inline_qr_image(organizer):
    """A mail client resolves `cid:` against the message's parts; here the test does, by
    routing each `cid:` reference to the part with that Content-ID."""
    ticket = ticket_songkran(organizer)
    ticket_email_send(ticket_id=ticket.pk)
    message = mail.outbox[0].message()
    parts = {
        part["Content-ID"].strip("<>"): part.get_payload(decode=True)
        for part in message.walk()
        if part["Content-ID"]
    }
    html = next(
        part.get_payload(decode=True).decode()
        for part in message.walk()
        if part.get_content_type() == "text/html"
    )
    resolver = "https://mail.invalid/cid/"
    OUTPUT.mkdir(exist_ok=True)
    with chromium() as browser:
        page = browser.new_page(viewport=PHONE)
        page.route(
            f"{resolver}**",
            lambda route: route.fulfill(
                status=200,
                content_type="image/png",
                body=parts[route.request.url[len(resolver) :]],
            ),
        )
        page.set_content(html.replace('src="cid:', f'src="{resolver}'), wait_until="load")
        image = page.locator("img").first
        natural_width = image.evaluate("image => image.complete && image.naturalWidth")
        width = image.bounding_box()["width"]
        page.screenshot(path=str(OUTPUT / "ticket_email.png"), full_page=True)
        pixels = image.screenshot()

    assert natural_width >= 290  # the PNG: 10 px a module (a signed code has more modules)
    assert width == 240
    assert qr_signed_references(pixels) == ["ABCD2345"]
