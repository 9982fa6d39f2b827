"""A device that changes hands (CONTRACT §15), in headless Chromium with one browser profile and
two staff members of the same organizer: signing out uploads the queue first when online; scans
not yet uploaded stay sealed to their author and go up only under that member's sign-in; after
sign-out the device holds no attendee data of the member's events, and a page with nobody
signed in admits nobody, online or offline."""

import json
import re

import pytest

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
    open_offline,
    outside,
    scan_offline,
    sign_in,
    until,
)
from tests.staff.test_checkin_page import _config
from tests.support import CHROMIUM, CHROMIUM_ARGS, live_site
from tickets.models import Ticket

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PORTS = range(8721, 8740)
TITLE = "Handover Night"

# Every record of every IndexedDB database of the site, by database and store.
EVERYTHING_STORED = """async () => {
    const stored = {};
    for (const {name} of await indexedDB.databases()) {
        const db = await new Promise((resolve, reject) => {
            const open = indexedDB.open(name);
            open.onsuccess = () => resolve(open.result);
            open.onerror = () => reject(open.error);
        });
        stored[name] = {};
        for (const store of Array.from(db.objectStoreNames)) {
            stored[name][store] = await new Promise((resolve, reject) => {
                const all = db.transaction(store).objectStore(store).getAll();
                all.onsuccess = () => resolve(all.result);
                all.onerror = () => reject(all.error);
            });
        }
        db.close();
    }
    return stored;
}"""

# The Cache Storage entries that are the page, or whose text names the event or a holder.
CACHED_ATTENDEE_DATA = """async (needles) => {
    const found = [];
    for (const name of await caches.keys()) {
        const cache = await caches.open(name);
        for (const request of await cache.keys()) {
            const response = await cache.match(request);
            const type = response.headers.get('content-type') || '';
            const text = /html|json/.test(type) ? await response.text() : '';
            if (new URL(request.url).pathname === '/checkin/'
                || needles.some(needle => text.includes(needle))) found.push(request.url);
        }
    }
    return found;
}"""


@pytest.fixture
def site(transactional_db):
    yield from live_site(PORTS)


def _member(organizer, username):
    user = UserFactory(username=username, full_name=username.title())
    user.set_password(f"{username}-pass-123")
    user.save()
    MembershipFactory(user=user, organizer=organizer, role="staff")
    return user


@pytest.fixture
def alice(organizer):
    return _member(organizer, "alice")


@pytest.fixture
def bob(organizer):
    return _member(organizer, "bob")


@pytest.fixture
def event(organizer):
    event = EventFactory(organizer=organizer, title=TITLE)
    regular = TicketTypeFactory(event=event, name="Regular", quantity=100)
    for i in (1, 2, 3):
        TicketFactory(
            event=event,
            ticket_type=regular,
            reference_code=f"HAND000{i}",
            firstname=f"Somchai{i}",
            lastname="Holder",
        )
    return event


def _sign_in(page, site, user, event):
    sign_in(page, site, user.username)
    page.fill("#gate", "North door")
    page.select_option("#event", str(event.pk))
    fresh(page)


def _sign_out_online(page):
    page.click("form.signout button[type=submit]")
    page.wait_for_url(re.compile(r"/oauth/login"), timeout=WAIT_MS)


def _logs(code):
    return list(
        CheckInLog.objects.filter(ticket__reference_code=code)
        .order_by("id")
        .values_list("action", "actor_user_id", "error")
    )


def _status(code):
    return Ticket.objects.get(reference_code=code).status


def test_handover_scans_sealed_at_an_offline_sign_out_go_up_only_under_their_author(
    site, event, alice, bob
):
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 390, "height": 844})
            page = context.new_page()
            _sign_in(page, site, alice, event)
            page.evaluate("navigator.serviceWorker.ready.then(() => true)")
            # Opened once more online: the worker now holds the page for offline use.
            page.reload()
            fresh(page)
            assert page.evaluate(CACHED_ATTENDEE_DATA, [TITLE]) == [f"{site}/checkin/"]

            go_offline(context, page)
            assert kind(scan_offline(page, "HAND0001")) == "admitted"
            expect(page.locator("#freshness")).to_have_attribute("data-waiting", "1")

            # Alice signs out with no network.
            page.click("form.signout button[type=submit]")
            page.wait_for_function(
                "() => document.documentElement.dataset.signedIn === 'no'", timeout=WAIT_MS
            )
            stored = page.evaluate(EVERYTHING_STORED)
            # Her copy is gone; the one thing left is her scan, sealed, with only what an upload
            # needs: no holder's name, no event title anywhere on the device.
            assert f"checkin-page-{alice.pk}" not in stored
            sealed = [scan for db in stored.values() for scans in db.values() for scan in scans]
            assert [(s["reference_code"], s["author"], s["state"]) for s in sealed] == [
                ("HAND0001", alice.pk, "pending")
            ]
            assert "Somchai" not in json.dumps(stored)
            assert TITLE not in json.dumps(stored)
            assert page.evaluate(CACHED_ATTENDEE_DATA, [TITLE, "Somchai"]) == []
            assert not page.locator("#manual").is_visible()

            # Opened again offline, in a new tab: nobody is signed in, nobody is admitted. (The
            # signed-out tab is closed: it still waits for the network to end the sign-in on the
            # server, which the next page opened online does too.)
            page.close()
            page = open_offline(context, f"{site}/checkin/")
            expect(page.locator("#signed-out")).to_be_visible()
            assert page.locator("#code").count() == 0
            assert page.evaluate(CACHED_ATTENDEE_DATA, [TITLE, "Somchai"]) == []

            # Back online: the sign-out reaches the server before anyone can use the page.
            context.set_offline(False)
            page.goto(f"{site}/checkin/")
            page.wait_for_url(re.compile(r"/oauth/login"), timeout=WAIT_MS)
            assert outside(lambda: _logs("HAND0001")) == []

            # Bob signs in on the same device: Alice's scan is neither his to see nor to send.
            _sign_in(page, site, bob, event)
            expect(page.locator("#freshness")).to_have_attribute("data-waiting", "0")
            stored = page.evaluate(EVERYTHING_STORED)
            assert stored[f"checkin-page-{bob.pk}"]["scans"] == []
            assert [s["author"] for s in stored["checkin-page-sealed"]["scans"]] == [alice.pk]
            assert outside(lambda: _logs("HAND0001")) == []
            assert outside(lambda: _status("HAND0001")) == "active"
            _sign_out_online(page)
            assert outside(lambda: CheckInLog.objects.filter(actor_user_id=bob.pk).count()) == 0

            # Alice signs in again: her sealed scan goes up under her name.
            _sign_in(page, site, alice, event)
            expect(page.locator("#freshness")).to_have_attribute("data-waiting", "0")
            assert outside(lambda: _logs("HAND0001")) == [("check_in", alice.pk, None)]
            assert outside(lambda: _status("HAND0001")) == "used"
            stored = page.evaluate(EVERYTHING_STORED)
            assert stored.get("checkin-page-sealed", {}).get("scans", []) == []
        finally:
            browser.close()


def test_handover_signing_out_online_uploads_the_queue_first(site, event, alice):
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 390, "height": 844})
            page = context.new_page()
            _sign_in(page, site, alice, event)

            # The API stops answering: two scans are decided from the copy and queued.
            blocked = True

            def api(route):
                if blocked:
                    route.abort()
                else:
                    route.continue_()

            context.route(re.compile(r"/api/public/"), api)
            assert kind(scan_offline(page, "HAND0001")) == "admitted"
            assert kind(scan_offline(page, "HAND0002")) == "admitted"
            expect(page.locator("#freshness")).to_have_attribute("data-waiting", "2")
            assert outside(lambda: _logs("HAND0001") + _logs("HAND0002")) == []

            # It answers again, and Alice signs out at once: the queue goes up before the
            # session ends.
            blocked = False
            _sign_out_online(page)
            assert outside(lambda: _logs("HAND0001")) == [("check_in", alice.pk, None)]
            assert outside(lambda: _logs("HAND0002")) == [("check_in", alice.pk, None)]
            stored = page.evaluate(EVERYTHING_STORED)
            assert f"checkin-page-{alice.pk}" not in stored
            assert stored.get("checkin-page-sealed", {}).get("scans", []) == []
        finally:
            browser.close()


def test_handover_a_sign_out_made_offline_ends_the_sign_in_once_online_and_the_page_stays(
    site, event, alice
):
    from django.conf import settings
    from django.contrib.sessions.models import Session
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 390, "height": 844})
            page = context.new_page()
            _sign_in(page, site, alice, event)
            key = next(
                c["value"] for c in context.cookies() if c["name"] == settings.SESSION_COOKIE_NAME
            )

            def signed_in():
                return Session.objects.filter(session_key=key).exists()

            go_offline(context, page)
            page.click("form.signout button[type=submit]")
            page.wait_for_function(
                "() => document.documentElement.dataset.signedIn === 'no'", timeout=WAIT_MS
            )
            navigations = []
            page.on("framenavigated", lambda frame: navigations.append(frame.url))
            assert outside(signed_in)

            # The network returns: the sign-in ends on the server, and the page, not navigated
            # away, still says that nobody is signed in here.
            context.set_offline(False)
            until(lambda: not signed_in(), "the sign-in to end on the server")
            assert navigations == []
            assert page.url == f"{site}/checkin/"
            expect(page.locator("#result .result-title")).to_have_text(
                "Signed out on this device: sign in to scan."
            )
        finally:
            browser.close()


# The page's database before the handover rule: one copy and one queue for whoever signed in.
LEGACY_SEED = """() => new Promise((resolve, reject) => {
    const open = indexedDB.open('checkin-page', 1);
    open.onupgradeneeded = () => {
        const d = open.result;
        d.createObjectStore('tickets', {keyPath: ['event_id', 'id']});
        d.createObjectStore('feeds', {keyPath: 'event_id'});
        d.createObjectStore('scans', {keyPath: 'id'}).createIndex('seq', 'seq');
    };
    open.onsuccess = () => {
        const tx = open.result.transaction(['tickets', 'scans'], 'readwrite');
        tx.objectStore('tickets').put({event_id: 1, id: 1, code: 'HAND0003',
            firstname: 'Somchai3', lastname: 'Holder'});
        tx.objectStore('scans').put({id: 'legacy-scan-1', seq: 1, event_id: EVENT,
            organizer_id: ORGANIZER, action: 'check_in', reference_code: 'HAND0003',
            ticket_id: null, check_in_type_ids: null, used_at: new Date().toISOString(),
            name: 'Somchai3 Holder', ticket_type: 'Regular', outcome: 'admitted',
            state: 'pending'});
        tx.oncomplete = () => { open.result.close(); resolve(); };
        tx.onerror = () => reject(tx.error);
    };
    open.onerror = () => reject(open.error);
})"""


def test_handover_the_unowned_queue_of_the_page_before_it_goes_up_under_nobody(site, event, alice):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 390, "height": 844})
            page = context.new_page()
            page.goto(f"{site}/checkin/")
            page.wait_for_url(re.compile(r"/oauth/login"))
            page.evaluate(
                LEGACY_SEED.replace("EVENT", str(event.pk)).replace(
                    "ORGANIZER", str(event.organizer_id)
                )
            )
            _sign_in(page, site, alice, event)
            stored = page.evaluate(EVERYTHING_STORED)
        finally:
            browser.close()

    # Its copy is gone; its scan names no author, so it stays sealed (without the holder's name)
    # and is sent by no one.
    assert "checkin-page" not in stored
    assert "Somchai" not in json.dumps(stored["checkin-page-sealed"])
    assert [(s["id"], s["author"]) for s in stored["checkin-page-sealed"]["scans"]] == [
        ("legacy-scan-1", None)
    ]
    assert outside(lambda: _logs("HAND0003")) == []


@pytest.mark.django_db
def test_handover_page_names_its_member_and_a_new_sign_in_after_each_sign_out(event, alice):
    from django.test import Client

    client = Client()
    client.force_login(alice)
    first = _config(client.get("/checkin/"))
    again = _config(client.get("/checkin/"))
    client.post("/oauth/logout/")
    client.force_login(alice)
    after = _config(client.get("/checkin/"))

    assert first["user_id"] == again["user_id"] == after["user_id"] == alice.pk
    # The same sign-in keeps its mark; a sign-in after a sign-out has a new one, so a page of
    # the ended one (from a cache, or a sign-out sent offline) is told apart.
    assert first["session"] == again["session"]
    assert after["session"] != first["session"]
    assert set(after["labels"]) >= {"signing_out", "signed_out"}
