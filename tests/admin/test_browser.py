"""A staff member checks a ticket in through the admin in a real browser (headless Chromium)."""

from pathlib import Path

import pytest
from django.utils import translation

from checkin.models import CheckInLog
from tests.factories import (
    EventFactory,
    MembershipFactory,
    TicketFactory,
    TicketTypeFactory,
    UserFactory,
)
from tests.support import CHROMIUM, CHROMIUM_ARGS, live_site
from ticketing.dates import admin_date
from tickets.models import Ticket

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PORTS = range(8401, 8420)
OUTPUT = Path(__file__).resolve().parents[2] / "test-output"


@pytest.fixture
def admin_server(transactional_db):
    """The whole site on 127.0.0.1, on the first free port of this suite's range."""
    yield from live_site(PORTS)


def test_staff_checks_a_ticket_in_and_sees_its_history(admin_server, organizer):
    staff = UserFactory(username="gatekeeper", full_name="Gate Keeper", is_staff=True)
    staff.set_password("gate-pass-123")
    staff.save()
    MembershipFactory(user=staff, organizer=organizer, role="staff")
    event = EventFactory(organizer=organizer, title="Songkran Beats")
    regular = TicketTypeFactory(event=event, name="Regular", quantity=500)
    ticket = TicketFactory(
        event=event, ticket_type=regular, reference_code="GATE0001", firstname="Malee"
    )
    TicketFactory(event=event, ticket_type=regular, reference_code="GATE0002")
    OUTPUT.mkdir(exist_ok=True)

    from playwright.sync_api import expect, sync_playwright

    # Each click that loads a page is followed by a wait for that page (its URL, then what it
    # shows): the page before has a #content too, and reading it would race the navigation.
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{admin_server}/admin/")
            page.fill("#id_username", "gatekeeper")
            page.fill("#id_password", "gate-pass-123")
            page.click("input[type=submit]")
            page.wait_for_url(f"{admin_server}/admin/")

            # Open the event: its ticket types show what is sold.
            page.click("a[href='/admin/events/event/']")
            page.wait_for_url(f"{admin_server}/admin/events/event/")
            page.click("#result_list >> text=Songkran Beats")
            page.wait_for_url(f"{admin_server}/admin/events/event/{event.pk}/change/")
            expect(page.locator("#content")).to_contain_text("2 / 500 sold · 498 left")
            page.click("text=Tickets of this event")
            page.wait_for_url(f"{admin_server}/admin/tickets/ticket/?event_id={event.pk}")

            # Check GATE0001 in through the action: the changelist comes back with a message.
            row = page.locator("#result_list tr", has_text="GATE0001")
            row.locator("input.action-select").check()
            page.select_option("select[name=action]", "check_in")
            page.click("button[name=index]")
            expect(page.locator("ul.messagelist")).to_have_text("Checked in 1 ticket.")

            # The ticket's page shows the check-in in its history.
            page.click("#result_list >> text=GATE0001")
            page.wait_for_url(f"{admin_server}/admin/tickets/ticket/{ticket.pk}/change/**")
            history = page.locator("#content")
            # The admin's CSS capitalises headings; the history's rows name the staff member.
            expect(history).to_contain_text("check-in history", ignore_case=True)
            expect(history).to_contain_text("Gate Keeper")
            shown = history.inner_text()
            page.screenshot(path=str(OUTPUT / "admin_check_in.png"), full_page=True)
        finally:
            browser.close()

    ticket.refresh_from_db()
    assert ticket.status == Ticket.Status.USED
    log = CheckInLog.objects.get(ticket=ticket)
    assert (log.action, log.actor_user_id) == ("check_in", staff.pk)
    # The entry's title gives the time as the admin's columns do: local, in its one style.
    with translation.override("en"):
        assert f"Check-in GATE0001 at {admin_date(log.at)}" in shown
    assert (OUTPUT / "admin_check_in.png").stat().st_size > 10_000


def test_lists_fit_a_1280_pixel_screen(admin_server, organizer):
    staff = UserFactory(username="backoffice", is_staff=True)
    staff.set_password("office-pass-123")
    staff.save()
    MembershipFactory(user=staff, organizer=organizer, role="admin")
    event = EventFactory(organizer=organizer, title="Bangkok Jazz Weekend at Lumphini Park 2026")
    regular = TicketTypeFactory(event=event, name="Early bird regular admission", quantity=500)
    for i in range(3):
        TicketFactory(
            event=event,
            ticket_type=regular,
            reference_code=f"WIDE000{i}",
            firstname="Chayanuch",
            lastname="Wongsawasdichai",
            email=f"chayanuch.wongsawasdichai{i}@example-company.co.th",
            status="used" if i else "active",
        )
    OUTPUT.mkdir(exist_ok=True)

    from playwright.sync_api import sync_playwright

    widths = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"{admin_server}/admin/")
            page.fill("#id_username", "backoffice")
            page.fill("#id_password", "office-pass-123")
            page.click("input[type=submit]")
            page.wait_for_url(f"{admin_server}/admin/")
            for name, path in (
                ("events", "/admin/events/event/"),
                ("tickets", f"/admin/tickets/ticket/?event_id={event.pk}"),
                ("orders", "/admin/tickets/order/"),
                ("check_in_logs", "/admin/checkin/checkinlog/"),
            ):
                page.goto(f"{admin_server}{path}")
                page.wait_for_selector("#changelist")
                widths[name] = page.evaluate("document.documentElement.scrollWidth")
                page.screenshot(path=str(OUTPUT / f"admin_{name}_1280.png"))
        finally:
            browser.close()

    assert widths == dict.fromkeys(widths, 1280)
