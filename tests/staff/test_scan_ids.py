"""Retry-safe scans on the check-in page (CONTRACT §7, §15), in headless Chromium: every online
scan and undo carries a `scan_id`; an answer lost to a dropped connection is asked again with the
same id and the door hears the first answer ("admitted", not "already used"); a scan that went
to the queue keeps its id, so its upload and a late online answer settle as one admission."""

import json
import re
import time

import pytest

from checkin.models import CheckInLog, ScanRecord
from tests.factories import EventFactory, MembershipFactory, TicketFactory, UserFactory
from tests.staff.driving import (
    WAIT_MS,
    answer,
    fresh,
    kind,
    open_paused,
    outside,
    scan_offline,
    scan_online,
    undo_online,
)
from tests.support import CHROMIUM, CHROMIUM_ARGS, live_site
from tickets.models import Ticket

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PORTS = range(8781, 8800)
SCAN_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")

# The page's queue as stored: the scans' ids and states.
STORED_SCANS = """() => new Promise((resolve, reject) => {
    const open = indexedDB.open('checkin-page-'
        + JSON.parse(document.getElementById('checkin-config').textContent).user_id);
    open.onsuccess = () => {
        const all = open.result.transaction('scans').objectStore('scans').getAll();
        all.onsuccess = () => resolve(all.result.map(s => ({id: s.id, state: s.state})));
        all.onerror = () => reject(all.error);
    };
    open.onerror = () => reject(open.error);
})"""


@pytest.fixture
def site(transactional_db):
    yield from live_site(PORTS)


@pytest.fixture
def event(organizer):
    staff = UserFactory(username="gate")
    staff.set_password("gate-pass-123")
    staff.save()
    MembershipFactory(user=staff, organizer=organizer, role="staff")
    event = EventFactory(organizer=organizer, title="Songkran Beats")
    TicketFactory(event=event, reference_code="RETRY001", firstname="Malee", lastname="Retry")
    return event


def _admissions(reference_code):
    ticket = Ticket.objects.get(reference_code=reference_code)
    return {
        "status": ticket.status,
        "check_ins": CheckInLog.objects.filter(ticket=ticket, action="check_in").count(),
        "records": list(
            ScanRecord.objects.filter(ticket=ticket).order_by("pk").values_list("scan_id", "action")
        ),
    }


def _body(request):
    return json.loads(request.post_data)


def _reset(route):
    route.abort("connectionreset")


def _bad_gateway(route):
    route.fulfill(status=502, content_type="text/html", body="<h1>502 Bad Gateway</h1>")


@pytest.mark.parametrize("lose", [_reset, _bad_gateway], ids=["connection-reset", "bad-gateway"])
def test_scan_id_online_scans_and_undos_carry_one_and_a_lost_answer_is_asked_again(
    site, event, lose
):
    """The server admits, and the answer is lost on the way back (the connection drops, or a
    proxy answers 502): the page asks again with the same scan id, hears the first answer
    replayed, and shows "admitted"; one admission."""
    from playwright.sync_api import sync_playwright

    sent, answers = [], []

    def gate(route):
        sent.append(_body(route.request))
        response = route.fetch()  # the server commits the admission either way
        if len(sent) == 1:
            lose(route)  # ... and its answer is lost on the way back
            return
        answers.append(response.json())
        route.fulfill(response=response)

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            _, page, errors = open_paused(browser, site, event, service_workers="block")
            page.route(re.compile(r"/tickets/checkin$"), gate)
            shown = scan_online(page, "RETRY001")
            renews = []
            page.on("request", lambda r: r.url.endswith("/renew") and renews.append(_body(r)))
            undone = undo_online(page)
        finally:
            browser.close()

    assert [s["reference_code"] for s in sent] == ["RETRY001", "RETRY001"]
    assert SCAN_ID.fullmatch(sent[0]["scan_id"])
    assert sent[1]["scan_id"] == sent[0]["scan_id"]
    assert [(a["success"], a["replayed"], a["ticket"]["status"]) for a in answers] == [
        (True, True, "used")
    ]
    assert (kind(shown), shown["title"], shown["name"]) == ("admitted", "Admitted", "Malee Retry")
    assert kind(undone) == "undone"
    assert len(renews) == 1 and SCAN_ID.fullmatch(renews[0]["scan_id"])
    assert renews[0]["scan_id"] != sent[0]["scan_id"]
    assert outside(lambda: _admissions("RETRY001")) == {
        "status": "active",
        "check_ins": 1,
        "records": [(sent[0]["scan_id"], "check_in"), (renews[0]["scan_id"], "renew")],
    }
    assert errors == []


def test_scan_id_a_scan_queued_after_a_lost_answer_uploads_with_its_id(site, event):
    """Every try of the scan loses its answer (the first one after the server admitted): the page
    decides it from its copy and queues it under the same scan id; the upload hears the first
    answer replayed, and the scan is done, not refused after the fact."""
    from playwright.sync_api import sync_playwright

    sent, uploads = [], []

    def gate(route):
        sent.append(_body(route.request))
        if len(sent) == 1:
            route.fetch()  # admitted on the server, the answer lost
        route.abort("connectionreset")

    def batch(route):
        response = route.fetch()
        uploads.append((_body(route.request), response.json()))
        route.fulfill(response=response)

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            _, page, errors = open_paused(browser, site, event, service_workers="block")
            page.route(re.compile(r"/tickets/checkin$"), gate)
            page.route(re.compile(r"/checkins$"), batch)
            page.clock.resume()  # the retries wait a moment each
            shown = scan_offline(page, "RETRY001")
            fresh(page)
            stored = page.evaluate(STORED_SCANS)
            conflicts = page.locator("#conflict-list li").count()
        finally:
            browser.close()

    scan_id = sent[0]["scan_id"]
    assert SCAN_ID.fullmatch(scan_id) and {s["scan_id"] for s in sent} == {scan_id}
    assert len(sent) >= 2  # asked again, until the page decided it from its copy
    assert (kind(shown), shown["title"]) == ("admitted", "Admitted · offline")
    assert [(u["scans"][0]["id"], u["scans"][0]["reference_code"]) for u, _ in uploads] == [
        (scan_id, "RETRY001")
    ]
    result = uploads[0][1]["results"][0]
    assert (result["success"], result["replayed"], result["error"]) == (True, True, None)
    assert stored == [{"id": scan_id, "state": "done"}]
    assert conflicts == 0
    assert outside(lambda: _admissions("RETRY001")) == {
        "status": "used",
        "check_ins": 1,
        "records": [(scan_id, "check_in")],
    }
    assert errors == []


def test_scan_id_an_upload_and_a_late_online_answer_do_not_cross(site, event):
    """The server admits but answers after the page's timeout: the page decides from its copy and
    queues the scan under its scan id, the upload goes up while the online request is still out,
    and the late answer comes after it. One admission, no refusal after the fact."""
    from playwright.sync_api import sync_playwright

    held, uploads = [], []

    def batch(route):
        response = route.fetch()
        uploads.append((_body(route.request), response.json()))
        route.fulfill(response=response)

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            _, page, errors = open_paused(browser, site, event, service_workers="block")
            page.route(
                re.compile(r"/tickets/checkin$"),
                lambda route: held.append((_body(route.request), route, route.fetch())),
            )
            page.route(re.compile(r"/checkins$"), batch)
            page.evaluate("delete document.getElementById('result').dataset.decidedMs")
            page.fill("#code", "RETRY001")
            page.press("#code", "Enter")
            deadline = time.monotonic() + WAIT_MS / 1000
            while not held:
                assert time.monotonic() < deadline, "the scan was never sent"
                page.wait_for_timeout(50)
            page.clock.run_for(3000)  # past the page's online timeout
            page.wait_for_function(
                "() => document.getElementById('result').dataset.decidedMs !== undefined",
                timeout=WAIT_MS,
            )
            shown = answer(page)
            page.clock.resume()
            deadline = time.monotonic() + WAIT_MS / 1000
            while not uploads:
                assert time.monotonic() < deadline, "the queue was never uploaded"
                page.wait_for_timeout(50)
            sent, route, late = held[0]
            late_answer = (late.status, late.json()["success"])
            route.fulfill(response=late)
            fresh(page)
            page.wait_for_function(f"() => ({STORED_SCANS})().then(s => s[0].state === 'done')")
            stored = page.evaluate(STORED_SCANS)
            conflicts = page.locator("#conflict-list li").count()
        finally:
            browser.close()

    scan_id = sent["scan_id"]
    assert (kind(shown), shown["title"]) == ("admitted", "Admitted · offline")
    assert [u["scans"][0]["id"] for u, _ in uploads] == [scan_id]
    result = uploads[0][1]["results"][0]
    assert (result["success"], result["replayed"]) == (True, True)
    assert late_answer == (200, True)
    assert stored == [{"id": scan_id, "state": "done"}]
    assert conflicts == 0
    assert outside(lambda: _admissions("RETRY001")) == {
        "status": "used",
        "check_ins": 1,
        "records": [(scan_id, "check_in")],
    }
    assert errors == []
