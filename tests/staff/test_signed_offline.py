"""Signed codes offline (CONTRACT §14, §11, §15), in headless Chromium: a ticket sold after the
page's last sync is admitted offline when its signed code verifies (WebCrypto Ed25519) with a key
the sync feed listed and names this event; the upload applies it. A forged code, another event's,
or one whose key the feed does not list is refused as unknown."""

import pytest

from checkin.models import ScanRecord
from events.signing_keys import signing_keys_published
from tests.factories import (
    EventFactory,
    MembershipFactory,
    TicketFactory,
    TicketTypeFactory,
    UserFactory,
)
from tests.staff.driving import (
    forged_code,
    fresh,
    go_offline,
    kind,
    open_paused,
    outside,
    scan_offline,
    swapped_code,
)
from tests.support import CHROMIUM, CHROMIUM_ARGS, live_site
from tickets.models import Ticket
from tickets.signed_codes import ticket_qr_data

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PORTS = range(8801, 8820)

# The page's queue as stored, by scan id: what each scan was and where it stands.
STORED_SCANS = """() => new Promise((resolve, reject) => {
    const open = indexedDB.open('checkin-page-'
        + JSON.parse(document.getElementById('checkin-config').textContent).user_id);
    open.onsuccess = () => {
        const all = open.result.transaction('scans').objectStore('scans').index('seq').getAll();
        all.onsuccess = () => resolve(all.result.map(s => ({
            id: s.id, code: s.reference_code, outcome: s.outcome, state: s.state})));
        all.onerror = () => reject(all.error);
    };
    open.onerror = () => reject(open.error);
})"""

# Each code's verified ticket id (null: refused), as the page's verifier says.
VERIFIED = """([codes, keys, event]) => Promise.all(
    codes.map(code => window.checkinSigned.verify(code, keys, event).then(p => p && p.t)))"""


@pytest.fixture
def site(transactional_db):
    yield from live_site(PORTS)


@pytest.fixture
def event(organizer):
    staff = UserFactory(username="gate")
    staff.set_password("gate-pass-123")
    staff.save()
    MembershipFactory(user=staff, organizer=organizer, role="staff")
    event = EventFactory(organizer=organizer, title="Songkran Beats", signed_codes=True)
    vip = TicketTypeFactory(event=event, name="VIP", quantity=100)
    TicketFactory(event=event, ticket_type=vip, reference_code="EARLY001")
    return event


def _sold_late(event):
    """A ticket sold after the page's last sync, and codes it must refuse."""
    vip = event.ticket_types.get(name="VIP")
    late = TicketFactory(event=event, ticket_type=vip, reference_code="LATE0001")
    elsewhere = EventFactory(organizer=event.organizer, signed_codes=True)
    stranger = TicketFactory(event=elsewhere, reference_code="OTHER001")
    code = ticket_qr_data(late)
    return {
        "late": late.pk,
        "code": code,
        "forged": forged_code(code),
        "elsewhere": ticket_qr_data(stranger),
    }


def test_signed_code_offline_admits_a_ticket_sold_after_the_last_sync_and_the_upload_applies_it(
    site, event
):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context, page, errors = open_paused(browser, site, event)
            go_offline(context, page)
            sold = outside(lambda: _sold_late(event))
            forged = scan_offline(page, sold["forged"])
            elsewhere = scan_offline(page, sold["elsewhere"])
            admitted = scan_offline(page, sold["code"])
            detail = page.locator("#result-detail").text_content()
            again = scan_offline(page, sold["code"])
            queued = page.evaluate(STORED_SCANS)
            assert outside(lambda: Ticket.objects.get(pk=sold["late"]).status) == "active"
            context.set_offline(False)  # the page uploads as the network returns
            fresh(page)
            uploaded = page.evaluate(STORED_SCANS)
        finally:
            browser.close()

    assert (kind(admitted), admitted["title"], admitted["name"]) == (
        "admitted",
        "Admitted · offline",
        "LATE0001",
    )
    assert detail == "VIP"
    assert (kind(again), again["title"]) == ("used", "Already used · offline")
    assert (kind(forged), forged["title"]) == ("refused", "Not found · offline")
    assert (kind(elsewhere), elsewhere["title"]) == ("refused", "Not found · offline")
    assert [(s["code"], s["outcome"], s["state"]) for s in queued] == [
        (sold["forged"], "not_found", "local"),
        (sold["elsewhere"], "not_found", "local"),
        (sold["code"], "admitted", "pending"),
        (sold["code"], "used", "local"),
    ]
    assert [s["state"] for s in uploaded] == ["local", "local", "done", "local"]
    assert outside(lambda: Ticket.objects.get(pk=sold["late"]).status) == "used"
    records = outside(
        lambda: list(ScanRecord.objects.filter(event=event).values_list("scan_id", "ticket_id"))
    )
    assert records == [(queued[2]["id"], sold["late"])]
    assert errors == []


def test_signed_code_verification_offline_refuses_forged_swapped_foreign_and_unlisted_keys(
    site, event
):
    from playwright.sync_api import sync_playwright

    sold = _sold_late(event)
    early = ticket_qr_data(Ticket.objects.get(reference_code="EARLY001"))
    keys = signing_keys_published(event_id=event.pk)
    this = {"id": event.pk, "organizer_id": event.organizer_id}
    codes = [
        sold["code"],
        sold["forged"],
        swapped_code(sold["code"], early),
        sold["elsewhere"],
        "T1.e30." + "A" * 86,  # {} signed by nobody
        "T1.not-a-code",
    ]

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            _, page, errors = open_paused(browser, site, event)
            verified = page.evaluate(VERIFIED, [codes, keys, this])
            # The feed lists no key of that id (retired, or never this event's).
            unlisted = page.evaluate(VERIFIED, [[sold["code"]], [], this])
            other_organizer = page.evaluate(
                VERIFIED, [[sold["code"]], keys, {**this, "organizer_id": this["organizer_id"] + 1}]
            )
        finally:
            browser.close()

    assert len(keys) == 1 and keys[0]["algorithm"] == "Ed25519"
    assert verified == [sold["late"], None, None, None, None, None]
    assert unlisted == [None]
    assert other_organizer == [None]
    assert errors == []
