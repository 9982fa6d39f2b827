"""The check-in page's gate name (issue 40): asked once on a device, kept in its storage,
changeable, and sent as the scan's `note` (CONTRACT §7, §11) online and in the batch upload, so
the event's dashboard counts each gate, not one "Staff check-in page" for every phone."""

import json
import re

import pytest
from django.test import Client

from checkin.models import CheckInLog
from tests.factories import (
    EventFactory,
    MembershipFactory,
    TicketFactory,
    TicketTypeFactory,
    UserFactory,
)
from tests.staff.driving import (
    WAIT_MS,
    fresh,
    go_offline,
    kind,
    open_paused,
    scan_offline,
    scan_online,
    undo_online,
)
from tests.support import CHROMIUM, CHROMIUM_ARGS, live_site

PORTS = range(8701, 8720)


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


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_page_asks_the_gate_once_keeps_it_and_sends_it_with_every_scan(site, organizer, staff):
    event = EventFactory(organizer=organizer, title="Songkran Beats")
    regular = TicketTypeFactory(event=event, name="Regular", quantity=10)
    online_ticket = TicketFactory(event=event, ticket_type=regular, reference_code="GATE0001")
    queued_ticket = TicketFactory(event=event, ticket_type=regular, reference_code="GATE0002")

    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context, page, errors = open_paused(browser, site, event, gate=None)
            unnamed = scan_online(page, "GATE0001")
            unnamed_detail = page.locator("#result-detail").text_content()
            focused = page.evaluate("document.activeElement.id")

            page.fill("#gate", "  North door ")
            page.press("#gate", "Enter")
            expect(page.locator("#code")).to_be_focused()
            admitted = scan_online(page, "GATE0001")
            undone = undo_online(page)
            admitted_again = scan_online(page, "GATE0001")

            # The gate is changeable, and a scan queued offline keeps the name it was made under.
            page.fill("#gate", "South door")
            go_offline(context, page)
            queued = scan_offline(page, "GATE0002")
            page.fill("#gate", "Somewhere else")
            context.set_offline(False)
            fresh(page)

            page.fill("#gate", "South door")
            page.reload()
            page.wait_for_function(
                "() => document.getElementById('freshness').dataset.state !== undefined",
                timeout=WAIT_MS,
            )
            kept = page.input_value("#gate")
        finally:
            browser.close()

    assert (kind(unnamed), unnamed["title"]) == ("refused", "Refused")
    assert unnamed_detail == "Name this gate first."
    assert focused == "gate"
    assert [kind(a) for a in (admitted, undone, admitted_again, queued)] == [
        "admitted",
        "undone",
        "admitted",
        "admitted",
    ]
    assert kept == "South door"
    logs = list(
        CheckInLog.objects.filter(ticket__event=event)
        .order_by("id")
        .values_list("ticket_id", "action", "note", "scan_id", "error")
    )
    assert [(t, a, n, e) for t, a, n, _, e in logs] == [
        (online_ticket.pk, "check_in", "North door", None),
        (online_ticket.pk, "renew", "North door", None),
        (online_ticket.pk, "check_in", "North door", None),
        (queued_ticket.pk, "check_in", "South door", None),
    ]
    assert logs[3][3] is not None  # uploaded by the batch endpoint, with its scan id
    assert errors == []


@pytest.mark.django_db
def test_gate_field_and_its_refusal_are_in_the_pages_language(organizer):
    staff = UserFactory(username="gate")
    MembershipFactory(user=staff, organizer=organizer, role="staff")
    client = Client()
    client.force_login(staff)

    thai = client.get("/checkin/", HTTP_ACCEPT_LANGUAGE="th").content.decode()
    english = client.get("/checkin/", HTTP_ACCEPT_LANGUAGE="en").content.decode()

    def labels(html):
        config = re.search(r'id="checkin-config" type="application/json">(.*?)</script>', html)
        return json.loads(config.group(1))["labels"]

    assert '<label for="gate">ประตู</label>' in thai
    assert 'placeholder="ตั้งชื่อประตูนี้ เช่น ประตูทิศเหนือ"' in thai
    assert labels(thai)["name_gate"] == "โปรดตั้งชื่อประตูนี้ก่อน"
    assert labels(thai)["not_checked_in"] == "ยังไม่ได้เช็คอิน"
    assert '<label for="gate">Gate</label>' in english
    assert labels(english)["name_gate"] == "Name this gate first."
