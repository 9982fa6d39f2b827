"""The admin fits the job: buttons on a ticket's page run the services (state and audit row),
prices round-trip in baht, the event list shows sold / checked-in / remaining at a constant
query count, and staff export and import attendees."""

import csv
import io
import re

import openpyxl
import pytest
from django.core import mail
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from checkin.models import CheckInLog
from events.models import TicketType
from tests.admin.helpers import change_form_data
from tests.factories import EventFactory, TicketFactory, TicketTypeFactory
from tests.task_support import run_due_tasks
from tickets.models import Ticket
from tickets.services.exporting import XLSX_CONTENT_TYPE


def _do(client, ticket, action, data=None):
    return client.post(reverse("admin:tickets_ticket_do", args=[ticket.pk, action]), data or {})


@pytest.mark.django_db
def test_ticket_page_offers_the_buttons(staff_client, world_a):
    page = staff_client.get(reverse("admin:tickets_ticket_change", args=[world_a.ticket.pk]))

    html = page.content.decode()
    for action in ("check_in", "undo_check_in", "revoke", "resend_email", "regenerate_page_link"):
        assert reverse("admin:tickets_ticket_do", args=[world_a.ticket.pk, action]) in html
    assert f"/t/{world_a.ticket.page_token}" in html  # the attendee's ticket page


@pytest.mark.django_db
def test_check_in_and_undo_buttons_call_the_gate_with_an_audit_row(staff_client, staff_a, world_a):
    ticket = world_a.ticket
    change = reverse("admin:tickets_ticket_change", args=[ticket.pk])

    response = _do(staff_client, ticket, "check_in")

    assert response.status_code == 302 and response["Location"] == change
    ticket.refresh_from_db()
    assert ticket.status == "used" and ticket.used_at is not None
    log = CheckInLog.objects.filter(ticket=ticket).get()
    assert (log.action, log.actor_user) == ("check_in", staff_a)

    again = _do(staff_client, ticket, "check_in")
    messages = [str(m) for m in again.wsgi_request._messages]
    assert any("already checked in at" in m for m in messages)

    _do(staff_client, ticket, "undo_check_in")

    ticket.refresh_from_db()
    assert (ticket.status, ticket.used_at) == ("active", None)
    actions = list(CheckInLog.objects.filter(ticket=ticket).values_list("action", "actor_user"))
    assert actions == [("renew", staff_a.pk), ("check_in", staff_a.pk)]


@pytest.mark.django_db
def test_revoke_button_asks_for_the_note_then_revokes(staff_client, world_a):
    ticket = world_a.ticket

    form = _do(staff_client, ticket, "revoke")
    assert form.status_code == 200 and "Revoke tickets" in form.content.decode()
    ticket.refresh_from_db()
    assert ticket.status == "active"

    done = _do(
        staff_client,
        ticket,
        "revoke",
        {"action": "revoke", "apply": "1", "_selected_action": [ticket.pk], "reason": "Refund"},
    )

    assert done.status_code == 302
    ticket.refresh_from_db()
    assert (ticket.status, ticket.revoke_note) == ("revoked", "Refund")
    world_a.ticket_type.refresh_from_db()
    assert world_a.ticket_type.sold_count == 1  # the place was freed (two tickets, one revoked)


@pytest.mark.django_db
def test_resend_and_new_link_buttons(staff_client, world_a):
    ticket = world_a.ticket
    old_token = ticket.page_token

    _do(staff_client, ticket, "resend_email")
    _do(staff_client, ticket, "regenerate_page_link")

    assert run_due_tasks() == 1
    assert [m.to for m in mail.outbox] == [[ticket.email]]
    ticket.refresh_from_db()
    assert ticket.page_token != old_token and len(ticket.page_token) == 32


@pytest.mark.django_db
def test_buttons_of_another_organizers_ticket_are_404_and_get_is_refused(
    staff_client, world_a, world_b
):
    assert _do(staff_client, world_b.ticket, "check_in").status_code == 404
    assert _do(staff_client, world_a.ticket, "delete").status_code == 404
    url = reverse("admin:tickets_ticket_do", args=[world_a.ticket.pk, "check_in"])
    assert staff_client.get(url).status_code == 405
    world_b.ticket.refresh_from_db()
    assert world_b.ticket.status == "active"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("typed", "satangs", "shown"),
    [("19.99", 1999, "19.99"), ("1500", 150000, "1500.00"), ("0.10", 10, "0.10")],
)
def test_price_is_typed_and_shown_in_baht_and_stored_in_satangs(
    admin_client_a, world_a, typed, satangs, shown
):
    url = reverse("admin:events_event_change", args=[world_a.event.pk])
    data = change_form_data(admin_client_a.get(url))
    data["ticket_types-0-price_baht"] = typed

    response = admin_client_a.post(url, data)

    assert response.status_code == 302
    world_a.ticket_type.refresh_from_db()
    assert world_a.ticket_type.price == satangs
    page = admin_client_a.get(url).content.decode()
    assert f'name="ticket_types-0-price_baht" value="{shown}"' in page


@pytest.mark.django_db
def test_price_in_baht_refuses_a_third_decimal_and_a_negative(admin_client_a, world_a):
    url = reverse("admin:events_event_change", args=[world_a.event.pk])
    before = world_a.ticket_type.price
    for typed in ("19.999", "-1", "12,50"):
        data = change_form_data(admin_client_a.get(url))
        data["ticket_types-0-price_baht"] = typed
        response = admin_client_a.post(url, data)
        assert response.status_code == 200  # the form again, with the field's error
        errors = response.context["inline_admin_formsets"][0].formset.errors[0]
        assert list(errors) == ["price_baht"]
    assert TicketType.objects.get(pk=world_a.ticket_type.pk).price == before


@pytest.mark.django_db
def test_event_list_shows_counts_at_the_same_query_count_for_1_and_50_events(
    staff_client, organizer
):
    def count_queries():
        url = reverse("admin:events_event_changelist")
        staff_client.get(url)
        with CaptureQueriesContext(connection) as queries:
            response = staff_client.get(url)
        assert response.status_code == 200
        return len(queries), response

    def add_event():
        event = EventFactory(organizer=organizer)
        ticket_type = TicketTypeFactory(event=event, quantity=10)
        TicketFactory(event=event, ticket_type=ticket_type, status="used")
        TicketFactory(event=event, ticket_type=ticket_type)
        return event

    add_event()
    one, response = count_queries()
    row = response.context["cl"].result_list[0]
    assert (row.sold_total, row.quantity_total, row.checked_in_total) == (2, 10, 1)
    html = response.content.decode()
    assert '<td class="field-sold">2 / 10</td>' in html
    assert '<td class="field-checked_in">1</td>' in html
    assert '<td class="field-remaining">8</td>' in html
    for _ in range(49):
        add_event()
    fifty, _ = count_queries()

    assert one == fifty


@pytest.mark.django_db
def test_event_page_shows_checked_in_per_ticket_type(staff_client, world_a):
    page = staff_client.get(reverse("admin:events_event_change", args=[world_a.event.pk]))

    html = page.content.decode()
    assert "2 / 100 sold · 98 left" in html
    # One sales column: sold, checked in, issued through the API (fits the page at 1280 px).
    assert re.search(
        r'<td class="field-sales">\s*<p>2 / 100 sold · 98 left<br>1 checked in<br>', html
    )


@pytest.mark.django_db
def test_admin_header_and_sections_read_as_a_product(staff_client):
    html = staff_client.get(reverse("admin:index")).content.decode()

    assert "Ticketing back office" in html
    assert "Django administration" not in html
    assert "Tickets and check-in" in html


@pytest.mark.django_db
def test_export_streams_the_events_tickets_and_orders_to_members_only(
    staff_client, world_a, world_b
):
    url = reverse("admin:tickets_ticket_export")

    response = staff_client.get(url, {"event_id": world_a.event.pk})

    assert response.streaming and response["Content-Type"] == "text/csv; charset=utf-8"
    data = b"".join(response.streaming_content)
    assert data.startswith(b"\xef\xbb\xbf")  # the BOM: Excel reads the file as UTF-8
    rows = list(csv.DictReader(io.StringIO(data.decode("utf-8-sig"))))
    assert sorted(r["reference_code"] for r in rows) == ["ACODE01", "AUSED01"]
    orders = staff_client.get(reverse("admin:tickets_order_export"), {"event_id": world_a.event.pk})
    assert [r["id"] for r in csv.DictReader(io.StringIO(b"".join(orders).decode("utf-8-sig")))] == [
        str(world_a.order.pk)
    ]
    assert staff_client.get(url, {"event_id": world_b.event.pk}).status_code == 404
    assert staff_client.get(url, {"event_id": "x"}).status_code == 404


@pytest.mark.django_db
def test_export_action_streams_the_selected_tickets(staff_client, world_a):
    response = staff_client.post(
        reverse("admin:tickets_ticket_changelist"),
        {"action": "export_csv", "_selected_action": [world_a.used.pk]},
    )

    rows = list(
        csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig")))
    )
    assert [r["reference_code"] for r in rows] == ["AUSED01"]


def _xlsx_rows(response) -> list[tuple]:
    return list(
        openpyxl.load_workbook(io.BytesIO(b"".join(response.streaming_content))).active.values
    )


@pytest.mark.django_db
def test_export_as_xlsx_from_the_event_and_the_list(staff_client, world_a, world_b):
    world_a.used.firstname, world_a.used.lastname = "สมชาย", "ใจดี"
    world_a.used.save()
    url = reverse("admin:tickets_ticket_export")

    response = staff_client.get(url, {"event_id": world_a.event.pk, "format": "xlsx"})

    assert response["Content-Type"] == XLSX_CONTENT_TYPE
    assert f'filename="event-{world_a.event.pk}-tickets.xlsx"' in response["Content-Disposition"]
    rows = list(
        openpyxl.load_workbook(io.BytesIO(b"".join(response.streaming_content))).active.values
    )
    by_code = {r[1]: dict(zip(rows[0], r, strict=True)) for r in rows[1:]}
    assert sorted(by_code) == ["ACODE01", "AUSED01"]
    assert (by_code["AUSED01"]["firstname"], by_code["AUSED01"]["lastname"]) == ("สมชาย", "ใจดี")
    orders = staff_client.get(
        reverse("admin:tickets_order_export"), {"event_id": world_a.event.pk, "format": "xlsx"}
    )
    order_rows = _xlsx_rows(orders)
    assert [r[0] for r in order_rows[1:]] == [world_a.order.pk]
    assert (
        staff_client.get(url, {"event_id": world_b.event.pk, "format": "xlsx"}).status_code == 404
    )
    selected = staff_client.post(
        reverse("admin:tickets_ticket_changelist"),
        {"action": "export_xlsx", "_selected_action": [world_a.used.pk]},
    )
    rows = list(
        openpyxl.load_workbook(io.BytesIO(b"".join(selected.streaming_content))).active.values
    )
    assert [r[1] for r in rows[1:]] == ["AUSED01"]


@pytest.mark.django_db
def test_import_previews_then_creates_through_the_row_service(admin_client_a, world_a):
    url = reverse("admin:tickets_ticket_import") + f"?event_id={world_a.event.pk}"
    text = (
        "firstname,lastname,email,phone,ticket_type,external_id\n"
        "Somchai,Jaidee,somchai@example.com,0812345678,A Regular,crm-1\n"
        "Bad,Phone,bad@example.com,123,A Regular,crm-2\n"
    )
    upload = SimpleUploadedFile("attendees.csv", text.encode(), content_type="text/csv")

    preview = admin_client_a.post(url, {"file": upload, "preview": "1"})

    html = preview.content.decode()
    assert "1 tickets would be created, 0 were already imported, 1 lines are rejected." in html
    assert "phone: Enter a valid phone number." in html
    assert not Ticket.objects.filter(external_id__isnull=False).exists()

    done = admin_client_a.post(
        url, {"confirm": "1", "upload": preview.context["confirm_form"]["upload"].value()}
    )

    assert done.status_code == 302
    ticket = Ticket.objects.get(external_id="crm-1")
    assert (ticket.phone, ticket.order.status) == ("+66812345678", "paid")
    world_a.ticket_type.refresh_from_db()
    assert world_a.ticket_type.sold_count == 3


@pytest.mark.django_db
def test_import_is_for_managers_of_the_event(staff_client, admin_client_a, world_b):
    url = reverse("admin:tickets_ticket_import")
    assert staff_client.get(url, {"event_id": world_b.event.pk}).status_code == 404
    assert admin_client_a.get(url, {"event_id": world_b.event.pk}).status_code == 404


@pytest.mark.django_db
def test_event_page_links_exports_to_staff_and_the_import_to_managers(
    staff_client, admin_client_a, world_a
):
    url = reverse("admin:events_event_change", args=[world_a.event.pk])
    query = f"?event_id={world_a.event.pk}"
    export = reverse("admin:tickets_ticket_export") + query
    import_ = reverse("admin:tickets_ticket_import") + query

    staff_page = staff_client.get(url).content.decode()
    admin_page = admin_client_a.get(url).content.decode()

    assert f'href="{export}"' in staff_page and f'href="{import_}"' not in staff_page
    assert f'href="{export}"' in admin_page and f'href="{import_}"' in admin_page


@pytest.mark.django_db
def test_check_in_button_of_a_multi_event_asks_for_the_types_then_admits(
    staff_client, staff_a, multi_event
):
    ticket = multi_event.ticket

    page = _do(staff_client, ticket, "check_in")
    assert page.status_code == 200 and "Day 1" in page.content.decode()

    done = _do(
        staff_client,
        ticket,
        "check_in",
        {
            "action": "check_in",
            "apply": "1",
            "_selected_action": [ticket.pk],
            f"types_{multi_event.event.pk}": [multi_event.day2.pk],
        },
    )

    assert done.status_code == 302
    assert list(ticket.type_check_ins.values_list("check_in_type_id", flat=True)) == [
        multi_event.day2.pk
    ]
    log = CheckInLog.objects.get(ticket=ticket)
    assert (log.action, log.check_in_type_id, log.actor_user) == (
        "check_in",
        multi_event.day2.pk,
        staff_a,
    )
