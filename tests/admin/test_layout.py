"""The event's admin page at 1280 px (issue 31): its inlines fit their column (no horizontal
scrolling of the page or inside an inline), and "Status" is shown once."""

from pathlib import Path

import pytest

from tests.factories import CheckInTypeFactory, EventFactory, TicketTypeFactory, UserFactory
from tests.support import CHROMIUM, CHROMIUM_ARGS, live_site

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PORTS = range(8601, 8620)
OUTPUT = Path(__file__).resolve().parents[2] / "test-output"

OVERFLOW = """() => {
    const page = document.documentElement;
    const inlines = [...document.querySelectorAll(".inline-group")].map((group) => {
        const table = group.querySelector("table");
        const box = group.getBoundingClientRect();
        return {
            id: group.id,
            scroll: group.scrollWidth,
            client: group.clientWidth,
            tableRight: table ? table.getBoundingClientRect().right : 0,
            right: box.right,
        };
    });
    return {scroll: page.scrollWidth, client: page.clientWidth, inlines};
}"""


@pytest.fixture
def admin_server(transactional_db):
    yield from live_site(PORTS)


def test_event_page_fits_1280_px(admin_server, organizer):
    user = UserFactory(username="layout", is_staff=True, is_superuser=True)
    user.set_password("layout-pass-123")
    user.save()
    event = EventFactory(organizer=organizer, title="เทศกาลดนตรีฤดูร้อน Summer Sound Festival")
    types = [
        TicketTypeFactory(
            event=event, name=name, quantity=quantity, api_quota=quota, sold_count=sold
        )
        for name, quantity, quota, sold in [
            ("บัตรยืนทั่วไป General Admission Standing", 12000, 5000, 10234),
            ("VIP Lounge with Backstage Access", 250, None, 199),
            ("Early Bird", 1500, 800, 1500),
        ]
    ]
    CheckInTypeFactory(event=event, name="Day 1 main gate", ticket_types=types)
    OUTPUT.mkdir(exist_ok=True)

    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"{admin_server}/admin/login/?next=/admin/events/event/{event.pk}/change/")
            page.fill("#id_username", "layout")
            page.fill("#id_password", "layout-pass-123")
            page.click("input[type=submit]")
            page.wait_for_url(f"{admin_server}/admin/events/event/{event.pk}/change/")
            page.locator("#ticket_types-group").wait_for()
            measured = page.evaluate(OVERFLOW)
            page.screenshot(path=str(OUTPUT / "event-admin-1280.png"), full_page=True)
            labels = page.locator(
                "fieldset.module .form-row label, fieldset.module .flex-container > label"
            )
            label_texts = [text.strip().rstrip(":").lower() for text in labels.all_inner_texts()]
        finally:
            browser.close()

    assert measured["scroll"] <= measured["client"], measured
    assert {inline["id"] for inline in measured["inlines"]} >= {
        "ticket_types-group",
        "check_in_types-group",
    }
    for inline in measured["inlines"]:
        assert inline["scroll"] <= inline["client"], inline
        assert inline["tableRight"] <= inline["right"] + 0.5, inline
    assert label_texts.count("status") == 1, label_texts
