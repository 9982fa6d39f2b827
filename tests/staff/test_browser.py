"""Staff at the gate on a phone (390×844, headless Chromium): sign in, pick the event, scan a
ticket's QR code through a fake camera, see it admitted, then already used, undo, and see it
admitted again; another organizer's ticket cannot be checked in through the page."""

import re
from pathlib import Path

import pytest

from checkin.models import CheckInLog
from tests.factories import (
    CheckInTypeFactory,
    EventFactory,
    MembershipFactory,
    OrganizerFactory,
    TicketFactory,
    TicketTypeFactory,
    UserFactory,
)
from tests.staff.camera import qr_video
from tests.staff.driving import sign_in
from tests.support import CHROMIUM, CHROMIUM_ARGS, live_site
from tickets.models import Ticket

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PORTS = range(8421, 8440)
OUTPUT = Path(__file__).resolve().parents[2] / "test-output"
PHONE = {"width": 390, "height": 844}
WAIT_MS = 20_000  # a scan needs the looped video to bring the code back into view


@pytest.fixture
def site(transactional_db):
    """The whole site on 127.0.0.1, on the first free port of this suite's range."""
    yield from live_site(PORTS)


def test_staff_scans_a_ticket_with_the_camera_and_undoes_it(site, organizer, tmp_path):
    staff = UserFactory(username="gate", full_name="Gate Keeper")
    staff.set_password("gate-pass-123")
    staff.save()
    MembershipFactory(user=staff, organizer=organizer, role="staff")
    event = EventFactory(organizer=organizer, title="Songkran Beats")
    regular = TicketTypeFactory(event=event, name="Regular", quantity=100)
    ticket = TicketFactory(
        event=event,
        ticket_type=regular,
        reference_code="GATE0001",
        firstname="Malee",
        lastname="Srisuk",
    )
    TicketFactory(event=event, ticket_type=regular, reference_code="GATE0002")
    other = EventFactory(organizer=OrganizerFactory(name="Other"), title="Other Fest")
    foreign = TicketFactory(
        event=other, ticket_type=TicketTypeFactory(event=other), reference_code="OTHER001"
    )
    video = qr_video(tmp_path / "qr.y4m", ticket.reference_code)
    OUTPUT.mkdir(exist_ok=True)

    from playwright.sync_api import expect, sync_playwright

    args = [
        *CHROMIUM_ARGS,
        "--use-fake-device-for-media-stream",
        "--use-fake-ui-for-media-stream",
        f"--use-file-for-fake-video-capture={video}",
    ]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=args)
        try:
            context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
            page = context.new_page()
            errors = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            sign_in(page, site)
            page.fill("#gate", "North door")

            page.select_option("#event", str(event.pk))
            result = page.locator("#result")
            expect(result).to_have_class(re.compile("result-admitted"), timeout=WAIT_MS)
            expect(result).to_contain_text("Admitted")
            expect(result).to_contain_text("Malee Srisuk")
            expect(result).to_contain_text("Regular")
            expect(page.locator("#counts")).to_have_text("Checked in 1 of 2")
            # Headless Chromium on Linux has no BarcodeDetector: the vendored WASM read it.
            native = page.evaluate("'BarcodeDetector' in window")
            decoder = page.locator("#video").get_attribute("data-decoder")
            page.screenshot(path=str(OUTPUT / "checkin_admitted.png"))

            # The code leaves the frame and comes back: the same ticket again.
            expect(result).to_have_class(re.compile("result-used"), timeout=WAIT_MS)
            expect(result).to_contain_text("Already used")
            expect(result).to_contain_text("(by Gate Keeper, Staff check-in page)")
            page.screenshot(path=str(OUTPUT / "checkin_already_used.png"))

            page.click("#undo")
            expect(result).to_have_class(re.compile("result-undone"), timeout=WAIT_MS)
            expect(result).to_contain_text("Malee Srisuk can be scanned again.")
            page.screenshot(path=str(OUTPUT / "checkin_undone.png"))
            expect(result).to_have_class(re.compile("result-admitted"), timeout=WAIT_MS)

            # Another organizer's ticket: not in this event, and the page's token cannot act
            # for that organizer (the API's §3 rules, unchanged).
            page.click("#camera-toggle")
            expect(page.locator("#camera-status")).to_have_text("Camera off")
            page.fill("#code", "other001")
            page.press("#code", "Enter")
            expect(result).to_have_class(re.compile("result-refused"))
            expect(result).to_contain_text("Not found")
            page.screenshot(path=str(OUTPUT / "checkin_not_found.png"))
            status, error = page.evaluate(
                """async (path) => {
                    const csrf = document.querySelector('meta[name="csrf-token"]').content;
                    const token = await (await fetch('/checkin/token', {
                        method: 'POST', headers: {'X-CSRFToken': csrf}})).json();
                    const response = await fetch(path, {
                        method: 'POST',
                        headers: {'Authorization': 'Bearer ' + token.access_token,
                                  'Content-Type': 'application/json'},
                        body: JSON.stringify({reference_code: 'OTHER001'})});
                    return [response.status, (await response.json()).error];
                }""",
                f"/api/public/organizers/{other.organizer_id}/events/{other.pk}/tickets/checkin",
            )
        finally:
            browser.close()

    assert (status, error) == (403, "not_organizer_member")
    assert (native, decoder) == (False, "zxing-wasm")
    assert errors == []
    ticket.refresh_from_db()
    assert ticket.status == Ticket.Status.USED
    actions = list(
        CheckInLog.objects.filter(ticket=ticket).order_by("id").values_list("action", flat=True)
    )
    assert actions[:3] == ["check_in", "renew", "check_in"]
    assert all(log.actor_user_id == staff.pk for log in CheckInLog.objects.filter(ticket=ticket))
    foreign.refresh_from_db()
    assert foreign.status == Ticket.Status.ACTIVE
    assert (OUTPUT / "checkin_admitted.png").stat().st_size > 10_000


def test_staff_picks_the_check_in_type_of_a_multi_event(site, organizer, tmp_path):
    staff = UserFactory(username="gate")
    staff.set_password("gate-pass-123")
    staff.save()
    MembershipFactory(user=staff, organizer=organizer, role="admin")
    EventFactory(organizer=organizer, title="Songkran Beats")
    festival = EventFactory(organizer=organizer, title="Two Day Festival")
    vip = TicketTypeFactory(event=festival, name="VIP", quantity=10)
    CheckInTypeFactory(event=festival, name="Day 1", position=0)
    day2 = CheckInTypeFactory(event=festival, name="Day 2", position=1)
    ticket = TicketFactory(
        event=festival, ticket_type=vip, reference_code="MULTI001", firstname="Anan", lastname="K"
    )
    video = qr_video(tmp_path / "qr.y4m", ticket.reference_code)
    OUTPUT.mkdir(exist_ok=True)

    from playwright.sync_api import expect, sync_playwright

    args = [
        *CHROMIUM_ARGS,
        "--use-fake-device-for-media-stream",
        "--use-fake-ui-for-media-stream",
        f"--use-file-for-fake-video-capture={video}",
    ]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=args)
        try:
            page = browser.new_page(viewport=PHONE)
            sign_in(page, site)
            page.fill("#gate", "North door")
            expect(page.locator("#type-row")).to_be_hidden()

            page.select_option("#event", str(festival.pk))
            expect(page.locator("#type-row")).to_be_visible()
            page.select_option("#check-in-type", str(day2.pk))
            result = page.locator("#result")
            expect(result).to_have_class(re.compile("result-admitted"), timeout=WAIT_MS)
            expect(result).to_contain_text("Anan K")
            expect(result).to_contain_text("VIP · Day 2")
            expect(result).to_have_class(re.compile("result-used"), timeout=WAIT_MS)
            expect(result).to_contain_text("Day 2")
            page.screenshot(path=str(OUTPUT / "checkin_multi_already_used.png"))
        finally:
            browser.close()

    assert list(ticket.type_check_ins.values_list("check_in_type_id", flat=True)) == [day2.pk]
