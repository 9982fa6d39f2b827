"""The event dashboard in the admin (issue 31): sold and checked in per ticket type, the check-in
timeline of CONTRACT §12 drawn as SVG by this service, check-ins per gate (the scan's note) and
person or application (issue 40); in real headless Chromium, at 1280 px, with a screenshot whose
bars are really drawn."""

from datetime import datetime, timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from PIL import Image

from checkin.dashboard import gate_counts
from checkin.models import CheckInLog
from checkin.services.page_tokens import page_token_issue
from tests.factories import (
    ApplicationFactory,
    EventFactory,
    MembershipFactory,
    TicketFactory,
    TicketTypeFactory,
    UserFactory,
)
from tests.support import CHROMIUM, CHROMIUM_ARGS, TokenClient, live_site, mint_token

PORTS = range(8621, 8640)
OUTPUT = Path(__file__).resolve().parents[2] / "test-output"
BAR_COLOUR = (0x79, 0xAE, 0xC8)  # the admin's --primary, the bars' fill


def _festival(organizer):
    """Two ticket types; six check-ins in three quarter hours through two gates."""
    event = EventFactory(organizer=organizer, title="Loy Krathong Night")
    standing = TicketTypeFactory(event=event, name="บัตรยืน Standing", quantity=100)
    vip = TicketTypeFactory(event=event, name="VIP", quantity=20)
    tickets = [TicketFactory(event=event, ticket_type=standing) for _ in range(5)]
    tickets += [TicketFactory(event=event, ticket_type=vip) for _ in range(3)]
    TicketFactory(event=event, ticket_type=vip, status="revoked")
    gate_app = ApplicationFactory(organizer=organizer, name="North gate scanner")
    staff = UserFactory(username="somchai", full_name="Somchai Gate")
    start = timezone.make_aware(datetime(2026, 11, 20, 18, 0))
    moments = [(0, gate_app, None), (5, gate_app, None), (7, gate_app, None)]
    moments += [(20, None, staff), (40, gate_app, staff), (44, None, staff)]
    used = [tickets[0], tickets[1], tickets[2], tickets[5], tickets[6], tickets[3]]
    for ticket, (minutes, application, user) in zip(used, moments, strict=True):
        at = start + timedelta(minutes=minutes)
        ticket.status, ticket.used_at = "used", at
        ticket.save(update_fields=["status", "used_at"])
        CheckInLog.objects.create(
            ticket=ticket,
            event=event,
            action=CheckInLog.Action.CHECK_IN,
            at=at,
            actor_application=application,
            actor_user=user,
        )
    CheckInLog.objects.create(  # refused: counts nowhere
        ticket=tickets[0], event=event, action="check_in", at=start, error="already_used"
    )
    return event


def _rows(page, table: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in row.locator("td").all_inner_texts()]
        for row in page.locator(f"#{table} tbody tr").all()
    ]


@pytest.mark.django_db
def test_dashboard_figures_and_queries(organizer, other_organizer, django_assert_num_queries):
    event = _festival(organizer)
    member = UserFactory(username="member", is_staff=True)
    MembershipFactory(user=member, organizer=organizer, role="staff")
    stranger = UserFactory(username="stranger", is_staff=True)
    MembershipFactory(user=stranger, organizer=other_organizer, role="admin")
    url = reverse("event-dashboard", args=[event.pk])
    client = Client()
    client.force_login(member)
    client.get(url)  # warm: the session's user, the templates

    # Session, user, event, memberships; the live counts (3); the gates (1); the user's
    # permissions for the admin's sidebar (2). As many whatever the event's size.
    with django_assert_num_queries(10):
        response = client.get(url)

    assert response.status_code == 200
    dashboard = response.context["dashboard"]
    assert [(t.name, t.sold, t.checked_in) for t in dashboard.stats.ticket_types] == [
        ("บัตรยืน Standing", 5, 4),
        ("VIP", 3, 2),
    ]
    assert [(g.gate, g.person, g.application, g.check_ins) for g in dashboard.gates] == [
        ("", "", "North gate scanner", 3),
        ("", "Somchai Gate", "", 2),
        ("", "Somchai Gate", "North gate scanner", 1),
    ]
    assert [b.check_ins for b in dashboard.stats.timeline] == [3, 1, 2]
    body = response.content.decode()
    assert body.count('class="bar"') == 3
    assert "บัตรยืน Standing" in body
    assert "<script" not in body.split('id="timeline"')[1]

    client.force_login(stranger)
    assert client.get(url).status_code == 404
    client.logout()
    assert client.get(url).status_code == 302  # to the admin's sign-in


@pytest.mark.django_db
def test_dashboard_counts_check_ins_per_gate_and_person(organizer):
    """Two staff on the check-in page at two gates, and a scanner app: each (gate, person,
    application) is a row, by the audit rows' note (CONTRACT §7); an upload's scans count as its
    online ones do; refusals and undos count nowhere; a note's surrounding spaces are no other
    gate."""
    event = EventFactory(organizer=organizer, title="Songkran Beats")
    regular = TicketTypeFactory(event=event, quantity=100)
    for i in range(8):
        TicketFactory(event=event, ticket_type=regular, reference_code=f"DASH{i:04d}")
    malee = UserFactory(username="malee", full_name="Malee Gate")
    anan = UserFactory(username="anan", full_name="Anan Gate")
    for user in (malee, anan):
        MembershipFactory(user=user, organizer=organizer, role="staff")
    turnstile = ApplicationFactory(organizer=organizer, name="Turnstile app")
    page_malee = TokenClient(page_token_issue(user=malee).access_token)
    page_anan = TokenClient(page_token_issue(user=anan).access_token)
    scanner = TokenClient(mint_token(application=turnstile, scope="public organizer"))
    path = f"/api/public/organizers/{organizer.pk}/events/{event.pk}"

    def scan(client, code, note=None, action="checkin"):
        body = {"reference_code": code, **({"note": note} if note is not None else {})}
        return client.post(f"{path}/tickets/{action}", body, format="json").status_code

    statuses = [
        scan(page_malee, "DASH0000", "North door"),
        scan(page_malee, "DASH0001", "North door "),
        scan(page_anan, "DASH0002", "North door"),
        scan(page_anan, "DASH0003", "South door"),
        scan(scanner, "DASH0005", "gate 2"),
        scan(scanner, "DASH0006"),
        scan(page_malee, "DASH0000", "North door"),  # already used: refused
        scan(page_malee, "DASH0001", "North door", action="renew"),  # an undo
    ]
    upload = page_anan.post(
        f"{path}/checkins",
        {
            "scans": [
                {
                    "id": "offline-scan-0004",
                    "reference_code": "DASH0004",
                    "used_at": timezone.now().isoformat(),
                    "note": "South door",
                }
            ]
        },
        format="json",
    )

    gates = gate_counts(event=event)

    assert statuses == [200, 200, 200, 200, 200, 200, 422, 200]
    assert upload.json()["success"] is True
    assert [(g.gate, g.person, g.application, g.check_ins) for g in gates] == [
        ("North door", "Malee Gate", "Staff check-in page", 2),
        ("South door", "Anan Gate", "Staff check-in page", 2),
        ("gate 2", "", "Turnstile app", 1),
        ("North door", "Anan Gate", "Staff check-in page", 1),
        ("", "", "Turnstile app", 1),
    ]
    admin = UserFactory(username="boss", is_staff=True)
    MembershipFactory(user=admin, organizer=organizer, role="admin")
    client = Client()
    client.force_login(admin)
    body = client.get(reverse("event-dashboard", args=[event.pk])).content.decode()
    table = body.split('id="gates"')[1].split("</table>")[0]
    assert table.count("<tr>") == 6  # the header and five gates
    assert "<td>South door</td><td>Anan Gate</td><td>Staff check-in page</td>" in table


@pytest.fixture
def admin_server(transactional_db):
    yield from live_site(PORTS)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_dashboard_in_chromium(admin_server, organizer):
    event = _festival(organizer)
    user = UserFactory(username="boss", is_staff=True)
    user.set_password("boss-pass-123")
    user.save()
    MembershipFactory(user=user, organizer=organizer, role="admin")
    OUTPUT.mkdir(exist_ok=True)
    shot = OUTPUT / "event-dashboard.png"

    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            change = f"{admin_server}/admin/events/event/{event.pk}/change/"
            page.goto(f"{admin_server}/admin/login/?next={change}")
            page.fill("#id_username", "boss")
            page.fill("#id_password", "boss-pass-123")
            page.click("input[type=submit]")
            page.wait_for_url(change)
            page.click("a:text-is('Dashboard')")
            page.wait_for_url(f"{admin_server}/admin/events/event/{event.pk}/dashboard/")
            page.locator("#timeline svg").wait_for()
            types = _rows(page, "ticket-types")
            gates = _rows(page, "gates")
            totals = page.locator("#tickets-total").inner_text(), page.inner_text("#tickets-used")
            bars = page.locator("#timeline svg rect.bar")
            heights = [float(bars.nth(i).get_attribute("height")) for i in range(bars.count())]
            overflow = page.evaluate("document.documentElement.scrollWidth > innerWidth")
            page.locator("#timeline").screenshot(path=str(OUTPUT / "event-dashboard-chart.png"))
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()

    assert types == [["บัตรยืน Standing", "5", "4"], ["VIP", "3", "2"]]
    assert gates == [
        ["—", "—", "North gate scanner", "3"],
        ["—", "Somchai Gate", "—", "2"],
        ["—", "Somchai Gate", "North gate scanner", "1"],
    ]
    assert totals == ("9", "6")
    assert heights[0] == pytest.approx(3 * heights[1], abs=0.05)
    assert heights[2] == pytest.approx(2 * heights[1], abs=0.05)
    assert not overflow
    # The chart is drawn: the bars' colour covers a real area of the chart's screenshot.
    chart = Image.open(OUTPUT / "event-dashboard-chart.png").convert("RGB")
    filled = sum(
        count
        for count, colour in chart.getcolors(maxcolors=chart.width * chart.height)
        if all(abs(a - b) <= 12 for a, b in zip(colour, BAR_COLOUR, strict=True))
    )
    assert filled > 0.05 * chart.width * chart.height, filled
