"""The check-in page's answers around a network drop (CONTRACT §15), in headless Chromium: its
copy learns its own online answers at once (a ticket admitted, or renewed, online is used, or
active, in the copy before the next scan, so a drop right after cannot let it in twice), and when
the network returns the counts are the server's at once and the scans it refused after the fact
are listed in the page's own words and times.

The page's clock is paused once its copy is complete (`tests.staff.driving`): no sync of the feed
runs between two scans and the counts' 20-second refresh never comes, so what the page shows can
only come from the answers and the browser's online and offline events."""

import re
import time

import pytest
from django.utils import translation

from checkin.services.page_tokens import page_token_issue
from tests.factories import (
    CheckInTypeFactory,
    EventFactory,
    MembershipFactory,
    TicketFactory,
    TicketTypeFactory,
    UserFactory,
)
from tests.staff.driving import (
    COPIED,
    CURSOR,
    WAIT_MS,
    fresh,
    go_offline,
    kind,
    open_paused,
    outside,
    scan_offline,
    scan_online,
    undo_online,
)
from tests.support import CHROMIUM, CHROMIUM_ARGS, TokenClient, live_site
from tickets.models import Ticket

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PORTS = range(8681, 8700)


@pytest.fixture
def site(transactional_db):
    yield from live_site(PORTS)


@pytest.fixture
def staff(organizer):
    user = UserFactory(username="gate", full_name="Gate Keeper")
    user.set_password("gate-pass-123")
    user.save()
    MembershipFactory(user=user, organizer=organizer, role="staff")
    return user


def test_offline_copy_learns_an_online_admission_before_the_next_scan(site, organizer, staff):
    event = EventFactory(organizer=organizer, title="Songkran Beats")
    regular = TicketTypeFactory(event=event, name="Regular", quantity=10)
    ticket = TicketFactory(
        event=event, ticket_type=regular, reference_code="ONCE0001", firstname="Malee"
    )

    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context, page, errors = open_paused(browser, site, event)
            before = page.evaluate(COPIED, [event.pk, ticket.pk])
            online = scan_online(page, "ONCE0001")
            learned = page.evaluate(COPIED, [event.pk, ticket.pk])
            go_offline(context, page)
            again = scan_offline(page, "ONCE0001")
        finally:
            browser.close()

    assert before == {"status": "active", "types": []}
    assert (kind(online), online["title"]) == ("admitted", "Admitted")
    assert (kind(again), again["title"]) == ("used", "Already used · offline")
    assert learned == {"status": "used", "types": []}
    assert outside(lambda: Ticket.objects.get(pk=ticket.pk).status) == Ticket.Status.USED
    assert errors == []


def test_a_scan_the_copy_cannot_decide_is_answered_and_the_next_one_is_decided(
    site, organizer, staff
):
    event = EventFactory(organizer=organizer, title="Songkran Beats")
    regular = TicketTypeFactory(event=event, name="Regular", quantity=10)
    TicketFactory(event=event, ticket_type=regular, reference_code="STOR0001", firstname="Malee")

    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context, page, errors = open_paused(browser, site, event)
            logged = []
            page.on("console", lambda m: m.type == "error" and logged.append(m.text))
            go_offline(context, page)
            # The browser's storage refuses every transaction (a full disk, a broken profile).
            page.evaluate(
                """() => { window.keptTransaction = IDBDatabase.prototype.transaction;
                           IDBDatabase.prototype.transaction = function () {
                               throw new DOMException('refused', 'UnknownError'); }; }"""
            )
            failed = scan_offline(page, "STOR0001")
            said = page.locator("#result-detail").text_content()
            busy = page.locator("#result").get_attribute("aria-busy")
            page.evaluate("() => { IDBDatabase.prototype.transaction = window.keptTransaction; }")
            then = scan_offline(page, "STOR0001")
        finally:
            browser.close()

    assert (kind(failed), failed["title"]) == ("refused", "Refused")
    assert said == "This scan could not be decided on this device: scan it again."
    assert busy is None  # the page takes the next scan
    assert any("scan not decided" in line for line in logged)
    assert (kind(then), then["title"], then["name"]) == (
        "admitted",
        "Admitted · offline",
        "Malee " + Ticket.objects.get(reference_code="STOR0001").lastname,
    )
    assert errors == []


def test_offline_copy_learns_an_online_undo_before_the_next_scan(site, organizer, staff):
    """Admitted online, the copy synced (used), then undone online: the copy is active again at
    once, so the holder is admitted offline (not refused as already used)."""
    event = EventFactory(organizer=organizer, title="Songkran Beats")
    regular = TicketTypeFactory(event=event, name="Regular", quantity=10)
    ticket = TicketFactory(event=event, ticket_type=regular, reference_code="UNDO0001")

    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context, page, errors = open_paused(browser, site, event)
            online = scan_online(page, "UNDO0001")
            # The sync that follows a scan runs on a timer: let it, and wait for its copy.
            page.clock.run_for(1000)
            page.wait_for_function(
                f"() => ({COPIED})([{event.pk}, {ticket.pk}]).then(t => t.status === 'used')",
                timeout=WAIT_MS,
            )
            undone = undo_online(page)
            learned = page.evaluate(COPIED, [event.pk, ticket.pk])
            go_offline(context, page)
            again = scan_offline(page, "UNDO0001")
        finally:
            browser.close()

    assert kind(online) == "admitted"
    assert (kind(undone), undone["title"]) == ("undone", "Check-in undone")
    assert (kind(again), again["title"]) == ("admitted", "Admitted · offline")
    assert learned == {"status": "active", "types": []}
    assert errors == []


def test_offline_copy_learns_an_online_admission_per_check_in_type(site, organizer, staff):
    festival = EventFactory(organizer=organizer, title="Two Day Festival")
    vip = TicketTypeFactory(event=festival, name="VIP", quantity=10)
    day1 = CheckInTypeFactory(event=festival, name="Day 1", position=0)
    day2 = CheckInTypeFactory(event=festival, name="Day 2", position=1)
    ticket = TicketFactory(event=festival, ticket_type=vip, reference_code="MULTI001")

    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context, page, errors = open_paused(browser, site, festival, check_in_type=day2)
            online = scan_online(page, "MULTI001")
            learned = page.evaluate(COPIED, [festival.pk, ticket.pk])
            go_offline(context, page)
            again = scan_offline(page, "MULTI001")
            # Day 1 is another door: the same ticket still enters there.
            page.select_option("#check-in-type", str(day1.pk))
            day1_answer = scan_offline(page, "MULTI001")
        finally:
            browser.close()

    assert (kind(online), online["title"]) == ("admitted", "Admitted")
    assert (kind(again), again["title"]) == ("used", "Already used · offline")
    assert learned == {"status": "used", "types": [day2.pk]}
    assert (kind(day1_answer), day1_answer["title"]) == ("admitted", "Admitted · offline")
    assert errors == []


def test_offline_copy_keeps_an_answer_over_a_feed_page_requested_before_it(site, organizer, staff):
    """The feed page the page asked for just before an admission comes back after it, with the
    ticket still active (its holder renamed meanwhile): the copy keeps the admission."""
    event = EventFactory(organizer=organizer, title="Songkran Beats")
    regular = TicketTypeFactory(event=event, name="Regular", quantity=10)
    ticket = TicketFactory(event=event, ticket_type=regular, reference_code="RACE0001")

    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            # No service worker: the test holds the feed's answer with a route.
            context, page, errors = open_paused(browser, site, event, service_workers="block")
            outside(lambda: Ticket.objects.filter(pk=ticket.pk).update(lastname="Renamed"))
            held = []
            page.route("**/tickets/sync?*", lambda route: held.append((route, route.fetch())))
            cursor = page.evaluate(CURSOR, event.pk)
            deadline = time.monotonic() + WAIT_MS / 1000
            while not held:  # time runs until the page asks for the feed (its 5 s timer)
                assert time.monotonic() < deadline, "the page asked for no page of the feed"
                page.clock.run_for(1000)
            online = scan_online(page, "RACE0001")
            route, stale = held[0]
            stale_tickets = stale.json()["tickets"]
            route.fulfill(response=stale)
            page.wait_for_function(
                f"() => ({CURSOR})({event.pk}).then(c => c !== {cursor!r})", timeout=WAIT_MS
            )
            kept = page.evaluate(COPIED, [event.pk, ticket.pk])
            go_offline(context, page)
            again = scan_offline(page, "RACE0001")
        finally:
            browser.close()

    assert [(t["id"], t["status"], t["lastname"]) for t in stale_tickets] == [
        (ticket.pk, "active", "Renamed")
    ]
    assert kind(online) == "admitted"
    assert (kind(again), again["title"]) == ("used", "Already used · offline")
    assert kept == {"status": "used", "types": []}
    assert errors == []


def _thai(message, **values):
    with translation.override("th"):
        return translation.gettext(message) % values


def _admitted_by_gate_b(staff, event, code):
    gate_b = TokenClient(page_token_issue(user=staff).access_token)
    path = f"/api/public/organizers/{event.organizer_id}/events/{event.pk}/tickets/checkin"
    return gate_b.post(path, {"reference_code": code}, format="json").json()["ticket"]["used_at"]


def test_refused_after_the_fact_is_listed_in_the_pages_words_and_local_time(site, organizer, staff):
    """Admitted here offline while gate B had admitted it: the conflict reads "already used,
    checked in at <gate B's time>" in Thai, as the page writes times, not the API's English
    message with its UTC timestamp."""
    event = EventFactory(organizer=organizer, title="Songkran Beats")
    regular = TicketTypeFactory(event=event, name="Regular", quantity=10)
    TicketFactory(
        event=event,
        ticket_type=regular,
        reference_code="LATE0001",
        firstname="Somchai",
        lastname="Late",
    )

    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context, page, errors = open_paused(browser, site, event, locale="th-TH")
            go_offline(context, page)
            used_at = outside(lambda: _admitted_by_gate_b(staff, event, "LATE0001"))
            here = scan_offline(page, "LATE0001")
            context.set_offline(False)
            item = page.locator("#conflict-list li")
            item.wait_for(timeout=WAIT_MS)
            listed = item.inner_text(), item.get_attribute("data-error")
            gate_b_time = page.evaluate(
                """(iso) => {
                    const c = JSON.parse(document.getElementById('checkin-config').textContent);
                    return new Intl.DateTimeFormat(c.locale, {timeZone: c.time_zone,
                        dateStyle: 'medium', timeStyle: 'short'}).format(new Date(iso)); }""",
                used_at,
            )
        finally:
            browser.close()

    assert kind(here) == "admitted"
    assert listed[1] == "ticket_already_used"
    assert listed[0].startswith(
        f"Somchai Late · {_thai('Already used')} · "
        f"{_thai('Checked in at %(time)s', time=gate_b_time)} · LATE0001 · "
    )
    assert "checked in at" not in listed[0]  # the API's English message
    assert not re.search(r"\d{4}-\d\d-\d\dT", listed[0])  # nor its timestamp
    assert errors == []


def test_counts_are_the_servers_as_soon_as_the_network_returns(site, organizer, staff):
    """Offline, the counts are the copy's and say so; back online, the server's, at once (not at
    the next 20-second refresh, which the paused clock never brings)."""
    event = EventFactory(organizer=organizer, title="Songkran Beats")
    regular = TicketTypeFactory(event=event, name="Regular", quantity=10)
    TicketFactory(event=event, ticket_type=regular, reference_code="BACK0001")
    TicketFactory(event=event, ticket_type=regular, reference_code="BACK0002")

    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context, page, errors = open_paused(browser, site, event)
            counts = page.locator("#counts")
            go_offline(context, page)
            scan_offline(page, "BACK0001")
            expect(counts).to_have_text("Checked in 1 of 2 · offline")
            context.set_offline(False)
            expect(counts).to_have_text("Checked in 1 of 2", timeout=WAIT_MS)
            fresh(page)
        finally:
            browser.close()

    assert errors == []
