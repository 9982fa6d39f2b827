"""The check-in page reads the signed codes of CONTRACT §14 from the QR (`T1.<payload>.<sig>`,
case-sensitive): online the server verifies them; offline the page finds the ticket its payload
names in its copy, as for a typed reference code, and the upload verifies them."""

import pytest

from tests.factories import EventFactory, MembershipFactory, TicketFactory, UserFactory
from tests.staff.driving import go_offline, kind, open_paused, outside, scan_offline, scan_online
from tests.support import CHROMIUM, CHROMIUM_ARGS, live_site
from tickets.models import Ticket
from tickets.signed_codes import ticket_qr_data

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PORTS = range(8741, 8760)


@pytest.fixture
def site(transactional_db):
    yield from live_site(PORTS)


def test_the_page_admits_signed_codes_online_and_offline(site, organizer):
    staff = UserFactory(username="gate")
    staff.set_password("gate-pass-123")
    staff.save()
    MembershipFactory(user=staff, organizer=organizer, role="staff")
    event = EventFactory(organizer=organizer, title="Songkran Beats", signed_codes=True)
    first = TicketFactory(event=event, reference_code="SIGN0001", firstname="Malee")
    second = TicketFactory(event=event, reference_code="SIGN0002", firstname="Somchai")
    codes = [ticket_qr_data(first), ticket_qr_data(second)]
    assert all(code.startswith("T1.") and code != code.upper() for code in codes)

    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context, page, errors = open_paused(browser, site, event)
            online = scan_online(page, codes[0])
            go_offline(context, page)
            offline = scan_offline(page, codes[1])
            again = scan_offline(page, codes[0])
        finally:
            browser.close()

    assert (kind(online), online["name"]) == ("admitted", "Malee " + first.lastname)
    assert (kind(offline), offline["title"]) == ("admitted", "Admitted · offline")
    assert kind(again) == "used"
    assert outside(lambda: Ticket.objects.get(pk=first.pk).status) == Ticket.Status.USED
    assert errors == []
