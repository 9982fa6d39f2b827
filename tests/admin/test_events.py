"""Events page: ticket types with their counters, quota rules, status through actions."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from events.exceptions import CapacityBelowSold
from events.models import Event, TicketType
from events.services import event_end_past, ticket_type_update
from tests.admin.helpers import change_form_data, messages_of
from tests.factories import (
    CheckInTypeFactory,
    EventFactory,
    MembershipFactory,
    TicketFactory,
    TicketTypeFactory,
    UserFactory,
)
from tickets.services.exporting import XLSX_CONTENT_TYPE


@pytest.fixture
def sold_event(organizer):
    """VIP: quantity 10, api_quota 5; 4 sold, 2 of them through the API."""
    event = EventFactory(organizer=organizer, title="Sold Event")
    vip = TicketTypeFactory(event=event, name="VIP", quantity=10, api_quota=5)
    TicketFactory.create_batch(2, event=event, ticket_type=vip)
    TicketFactory.create_batch(2, event=event, ticket_type=vip, issued_via_api=True)
    vip.refresh_from_db()
    return event, vip


def _ticket_type_prefix(response, ticket_type):
    for inline in response.context["inline_admin_formsets"]:
        for form in inline.formset.forms:
            if form.instance.pk == ticket_type.pk:
                return form.prefix
    raise AssertionError("ticket type not on the page")


@pytest.mark.django_db
def test_event_page_shows_sold_quantity_and_api_remaining(admin_client_a, sold_event):
    event, _ = sold_event

    body = admin_client_a.get(
        reverse("admin:events_event_change", args=[event.pk])
    ).content.decode()

    assert "4 / 10 sold · 6 left" in body
    assert "2 / 5 via API · 3 left" in body


@pytest.mark.django_db
def test_quantity_below_sold_is_rejected_with_a_message(admin_client_a, sold_event):
    event, vip = sold_event
    url = reverse("admin:events_event_change", args=[event.pk])
    page = admin_client_a.get(url)
    data = change_form_data(page)
    prefix = _ticket_type_prefix(page, vip)
    data[f"{prefix}-quantity"] = "3"
    data[f"{prefix}-api_quota"] = "1"

    response = admin_client_a.post(url, data)

    assert response.status_code == 200  # the form again, with the errors
    errors = response.context["inline_admin_formsets"][0].formset.errors
    row = next(e for e in errors if e)
    assert row["quantity"] == [
        "Quantity cannot be lower than the 4 tickets already sold of 'VIP'. "
        "Revoke tickets first to lower it."
    ]
    assert row["api_quota"] == [
        "API quota cannot be lower than the 2 tickets already issued through the API for 'VIP'."
    ]
    vip.refresh_from_db()
    assert (vip.quantity, vip.api_quota, vip.sold_count) == (10, 5, 4)


@pytest.mark.django_db
def test_quantity_down_to_sold_is_saved_and_counters_are_not_written(admin_client_a, sold_event):
    event, vip = sold_event
    url = reverse("admin:events_event_change", args=[event.pk])
    page = admin_client_a.get(url)
    data = change_form_data(page)
    data[f"{_ticket_type_prefix(page, vip)}-quantity"] = "4"
    # A sale elsewhere after the page was loaded; saving the page must not lose it.
    TicketType.objects.filter(pk=vip.pk).update(sold_count=3)

    response = admin_client_a.post(url, data)

    assert response.status_code == 302
    vip.refresh_from_db()
    assert (vip.quantity, vip.sold_count) == (4, 3)


@pytest.mark.django_db
def test_new_ticket_type_and_check_in_type_are_added_inline(admin_client_a, organizer):
    event = EventFactory(organizer=organizer)
    regular = TicketTypeFactory(event=event, name="Regular")
    other_event_type = TicketTypeFactory(name="Elsewhere")
    url = reverse("admin:events_event_change", args=[event.pk])
    page = admin_client_a.get(url)
    data = change_form_data(page)
    data.update(
        {
            "ticket_types-TOTAL_FORMS": "2",
            "ticket_types-1-name": "Student",
            "ticket_types-1-price_baht": "500.00",
            "ticket_types-1-kind": "normal",
            "ticket_types-1-quantity": "20",
            "ticket_types-1-status": "on_sale",
            "ticket_types-1-position": "1",
            "check_in_types-TOTAL_FORMS": "1",
            "check_in_types-0-name": "Day 1",
            "check_in_types-0-position": "0",
            "check_in_types-0-ticket_types": [str(regular.pk)],
        }
    )
    field = page.context["inline_admin_formsets"][1].formset.form.base_fields["ticket_types"]
    offered = {tt.pk for tt in field.queryset}

    response = admin_client_a.post(url, data)

    assert response.status_code == 302
    assert offered == {regular.pk}
    assert other_event_type.pk not in offered
    student = TicketType.objects.get(event=event, name="Student")
    assert (student.price, student.quantity, student.sold_count) == (50000, 20, 0)
    assert list(event.check_in_types.get().ticket_types.all()) == [regular]


@pytest.mark.django_db
def test_check_in_type_cannot_name_another_events_ticket_type(admin_client_a, organizer):
    event = EventFactory(organizer=organizer)
    foreign = TicketTypeFactory(name="Foreign")
    url = reverse("admin:events_event_change", args=[event.pk])
    data = change_form_data(admin_client_a.get(url))
    data.update(
        {
            "check_in_types-TOTAL_FORMS": "1",
            "check_in_types-0-name": "Gate",
            "check_in_types-0-position": "0",
            "check_in_types-0-ticket_types": [str(foreign.pk)],
        }
    )

    response = admin_client_a.post(url, data)

    assert response.status_code == 200
    assert not event.check_in_types.exists()


@pytest.mark.django_db
def test_status_is_read_only_and_moves_through_actions(admin_client_a, organizer):
    draft = EventFactory(organizer=organizer, status=Event.Status.DRAFT, title="Draft one")
    active = EventFactory(organizer=organizer, status=Event.Status.ACTIVE, title="Live one")
    page = admin_client_a.get(reverse("admin:events_event_change", args=[draft.pk]))
    assert "status" not in page.context["adminform"].form.fields

    response = admin_client_a.post(
        reverse("admin:events_event_changelist"),
        {"action": "publish", "_selected_action": [draft.pk, active.pk], "index": 0},
        follow=True,
    )

    draft.refresh_from_db()
    assert draft.status == Event.Status.ACTIVE
    assert messages_of(response) == [
        "Published 1 event.",
        "1 not done: 'Live one' is active, not a draft.",
    ]


@pytest.mark.django_db
def test_end_now_action(admin_client_a, organizer):
    active = EventFactory(organizer=organizer, status=Event.Status.ACTIVE)

    response = admin_client_a.post(
        reverse("admin:events_event_changelist"),
        {"action": "end_now", "_selected_action": [active.pk], "index": 0},
        follow=True,
    )

    active.refresh_from_db()
    assert active.status == Event.Status.ENDED
    assert messages_of(response) == ["Ended 1 event."]


@pytest.mark.django_db
def test_staff_sees_ticket_types_read_only(staff_client, sold_event, staff_a):
    event, _ = sold_event
    staff_a.memberships.update(organizer=event.organizer)

    page = staff_client.get(reverse("admin:events_event_change", args=[event.pk]))

    assert page.status_code == 200
    formset = page.context["inline_admin_formsets"][0]
    assert formset.has_change_permission is False
    assert "4 / 10 sold · 6 left" in page.content.decode()


@pytest.mark.django_db
def test_ticket_type_update_rechecks_under_lock(sold_event):
    _, vip = sold_event

    with pytest.raises(CapacityBelowSold) as exc:
        ticket_type_update(ticket_type_id=vip.pk, quantity=3)

    assert exc.value.code == "capacity_below_sold"
    assert exc.value.extra["fields"] == {"quantity": [exc.value.message]}
    vip.refresh_from_db()
    assert vip.quantity == 10


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["admin", "staff"])
def test_event_page_query_count_does_not_grow_with_types(organizer, role):
    user = UserFactory(is_staff=True)
    MembershipFactory(user=user, organizer=organizer, role=role)
    client = Client()
    client.force_login(user)
    counts = []
    for n in (1, 6):
        event = EventFactory(organizer=organizer)
        types = TicketTypeFactory.create_batch(n, event=event)
        for _ in range(n):
            CheckInTypeFactory(event=event, ticket_types=types)
        with CaptureQueriesContext(connection) as queries:
            assert (
                client.get(reverse("admin:events_event_change", args=[event.pk])).status_code == 200
            )
        counts.append(len(queries))

    assert counts[0] == counts[1]


@pytest.mark.django_db
def test_event_end_past_ends_only_active_events_that_are_over(organizer):
    now = timezone.now()
    over = EventFactory(
        organizer=organizer, start_at=now - timedelta(days=2), end_at=now - timedelta(hours=1)
    )
    running = EventFactory(
        organizer=organizer, start_at=now - timedelta(hours=1), end_at=now + timedelta(hours=1)
    )
    draft_over = EventFactory(
        organizer=organizer,
        status=Event.Status.DRAFT,
        start_at=now - timedelta(days=2),
        end_at=now - timedelta(hours=1),
    )

    assert event_end_past(now=now) == 1
    assert event_end_past(now=now) == 0  # idempotent

    statuses = dict(Event.objects.values_list("pk", "status"))
    assert statuses == {over.pk: "ended", running.pk: "active", draft_over.pk: "draft"}


@pytest.mark.django_db
def test_manager_deletes_an_event_without_tickets_but_not_one_with_tickets(
    admin_client_a, organizer, world_a
):
    empty = EventFactory(organizer=organizer, status=Event.Status.DRAFT)
    TicketTypeFactory(event=empty)

    deleted = admin_client_a.post(
        reverse("admin:events_event_delete", args=[empty.pk]), {"post": "yes"}
    )
    protected = admin_client_a.post(
        reverse("admin:events_event_delete", args=[world_a.event.pk]), {"post": "yes"}
    )

    assert deleted.status_code == 302
    assert not Event.objects.filter(pk=empty.pk).exists()
    assert protected.status_code == 200  # "cannot delete: protected related objects"
    assert Event.objects.filter(pk=world_a.event.pk).exists()


@pytest.mark.django_db
def test_event_page_links_the_xlsx_exports_beside_the_csv_ones(admin_client_a, world_a):
    event = world_a.event
    page = admin_client_a.get(reverse("admin:events_event_change", args=[event.pk]))

    links = {label: url for url, label in page.context["event_links"]}
    tickets = reverse("admin:tickets_ticket_export") + f"?event_id={event.pk}"
    orders = reverse("admin:tickets_order_export") + f"?event_id={event.pk}"
    assert list(links)[1:5] == [
        "Export tickets (CSV)",
        "Export tickets (Excel)",
        "Export orders (CSV)",
        "Export orders (Excel)",
    ]
    assert links["Export tickets (Excel)"] == tickets + "&format=xlsx"
    assert links["Export orders (Excel)"] == orders + "&format=xlsx"
    html = page.content.decode()
    assert f'<a href="{tickets}&amp;format=xlsx">Export tickets (Excel)</a>' in html
    workbook = admin_client_a.get(links["Export tickets (Excel)"])
    assert workbook["Content-Type"] == XLSX_CONTENT_TYPE
