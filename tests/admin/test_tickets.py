"""Ticket actions call the gate services and report each outcome; the ticket page shows history."""

from datetime import UTC, datetime

import pytest
from django.core import mail
from django.urls import reverse

from checkin.models import CheckInLog, TicketCheckIn
from events.models import TicketType
from tests.admin.helpers import change_form_data, changelist_column, messages_of
from tests.factories import OrderFactory, TicketFactory, UserFactory
from tests.task_support import run_due_tasks
from tickets.models import Ticket

CHANGELIST = "admin:tickets_ticket_changelist"
# 19:30 in Bangkok (the site's TIME_ZONE), as the admin's date columns show it.
USED_AT = datetime(2026, 11, 21, 12, 30, tzinfo=UTC)
USED_AT_SHOWN = "21 Nov 2026 19:30"  # the admin's one date style (ticketing.dates)


def _act(client, action, tickets, **extra):
    return client.post(
        reverse(CHANGELIST),
        {"action": action, "_selected_action": [t.pk for t in tickets], **extra},
        follow=True,
    )


@pytest.mark.django_db
def test_check_in_action_uses_the_service_and_reports(staff_client, staff_a, world_a):
    revoked = TicketFactory(
        event=world_a.event,
        ticket_type=world_a.ticket_type,
        status="revoked",
        reference_code="AREVOKED1",
    )

    Ticket.objects.filter(pk=world_a.used.pk).update(used_at=USED_AT)

    response = _act(staff_client, "check_in", [world_a.ticket, world_a.used, revoked], index=0)

    world_a.ticket.refresh_from_db()
    assert world_a.ticket.status == Ticket.Status.USED
    assert world_a.ticket.used_at is not None
    log = CheckInLog.objects.get(ticket=world_a.ticket)
    assert (log.action, log.actor_user_id, log.actor_application_id) == (
        "check_in",
        staff_a.pk,
        None,
    )
    messages = messages_of(response)
    assert messages[0] == "Checked in 1 ticket."
    assert messages[1] == (
        f"2 not done: AUSED01: already checked in at {USED_AT_SHOWN}; "
        "AREVOKED1: Ticket AREVOKED1 has been revoked."
    )


@pytest.mark.django_db
def test_check_in_on_multi_event_asks_for_types_then_checks_in(staff_client, multi_event):
    first = _act(staff_client, "check_in", [multi_event.ticket], index=0)

    assert first.status_code == 200
    assert first.templates[0].name == "admin/action_form.html"
    form = first.context["form"]
    assert dict(form.fields[f"types_{multi_event.event.pk}"].choices) == {
        multi_event.day1.pk: "Day 1",
        multi_event.day2.pk: "Day 2",
    }
    assert not TicketCheckIn.objects.exists()

    second = _act(
        staff_client,
        "check_in",
        [multi_event.ticket],
        apply="1",
        note="main gate",
        **{f"types_{multi_event.event.pk}": [str(multi_event.day1.pk)]},
    )

    assert messages_of(second) == ["Checked in 1 ticket."]
    admitted = TicketCheckIn.objects.get(ticket=multi_event.ticket)
    assert admitted.check_in_type == multi_event.day1
    log = CheckInLog.objects.get(ticket=multi_event.ticket)
    assert (log.check_in_type_id, log.note) == (multi_event.day1.pk, "main gate")


@pytest.mark.django_db
def test_check_in_without_choosing_a_type_shows_the_service_error(staff_client, multi_event):
    response = _act(staff_client, "check_in", [multi_event.ticket], apply="1")

    assert messages_of(response) == [
        "1 not done: MULTI0001: This event has check-in types: send check_in_type_ids."
    ]
    multi_event.ticket.refresh_from_db()
    assert multi_event.ticket.status == Ticket.Status.ACTIVE


@pytest.mark.django_db
def test_second_check_in_of_a_type_reports_per_type(staff_client, multi_event):
    types = {f"types_{multi_event.event.pk}": [str(multi_event.day1.pk)]}
    _act(staff_client, "check_in", [multi_event.ticket], apply="1", **types)
    TicketCheckIn.objects.filter(ticket=multi_event.ticket).update(used_at=USED_AT)

    response = _act(staff_client, "check_in", [multi_event.ticket], apply="1", **types)

    assert messages_of(response) == [
        f"1 not done: MULTI0001: Day 1: already checked in at {USED_AT_SHOWN}"
    ]


@pytest.mark.django_db
def test_undo_check_in_action(staff_client, world_a):
    response = _act(staff_client, "undo_check_in", [world_a.used, world_a.ticket], index=0)

    world_a.used.refresh_from_db()
    assert (world_a.used.status, world_a.used.used_at) == ("active", None)
    assert CheckInLog.objects.filter(ticket=world_a.used, action="renew").count() == 1
    assert messages_of(response) == [
        "Undid the check-in of 1 ticket.",
        "1 not done: ACODE01: Ticket ACODE01 is not checked in.",
    ]


@pytest.mark.django_db
def test_revoke_asks_for_a_note_then_revokes_and_frees_the_place(staff_client, world_a):
    sold_before = TicketType.objects.get(pk=world_a.ticket_type.pk).sold_count

    page = _act(staff_client, "revoke", [world_a.ticket, world_a.used], index=0)
    assert page.templates[0].name == "admin/action_form.html"
    assert "reason" in page.context["form"].fields
    world_a.ticket.refresh_from_db()
    assert world_a.ticket.status == Ticket.Status.ACTIVE

    Ticket.objects.filter(pk=world_a.used.pk).update(used_at=USED_AT)
    response = _act(
        staff_client, "revoke", [world_a.ticket, world_a.used], apply="1", reason="Chargeback"
    )

    world_a.ticket.refresh_from_db()
    assert (world_a.ticket.status, world_a.ticket.revoke_note) == ("revoked", "Chargeback")
    assert TicketType.objects.get(pk=world_a.ticket_type.pk).sold_count == sold_before - 1
    messages = messages_of(response)
    assert messages[0] == "Revoked 1 ticket."
    assert messages[1] == (
        f"1 not done: AUSED01: checked in at {USED_AT_SHOWN}; undo the check-in before revoking"
    )


@pytest.mark.django_db
def test_resend_email_queues_after_commit(
    staff_client, world_a, django_capture_on_commit_callbacks
):
    revoked = TicketFactory(
        event=world_a.event,
        ticket_type=world_a.ticket_type,
        status="revoked",
        reference_code="AREV02",
    )

    with django_capture_on_commit_callbacks(execute=True):
        response = _act(staff_client, "resend_email", [world_a.ticket, revoked], index=0)

    assert messages_of(response) == [
        "Queued the ticket email of 1 ticket.",
        "1 not done: AREV02: Ticket AREV02 is revoked; it is not sent.",
    ]
    assert run_due_tasks() == 1
    assert [m.to for m in mail.outbox] == [[world_a.ticket.email]]
    assert "ACODE01" in mail.outbox[0].body


@pytest.mark.django_db
def test_ticket_page_shows_check_in_history(staff_client, world_a):
    _act(staff_client, "check_in", [world_a.ticket], index=0)

    page = staff_client.get(reverse("admin:tickets_ticket_change", args=[world_a.ticket.pk]))

    assert page.status_code == 200
    history = next(
        f for f in page.context["inline_admin_formsets"] if f.formset.model is CheckInLog
    )
    rows = list(history.formset.queryset)
    assert [(r.action, r.actor_user.username) for r in rows] == [("check_in", "gate-staff")]
    assert "Check-in history" in page.content.decode()


@pytest.mark.django_db
def test_check_in_history_titles_show_local_time(staff_client, world_a):
    CheckInLog.objects.filter(pk=world_a.log.pk).update(at=USED_AT, created_at=USED_AT)

    page = staff_client.get(reverse("admin:tickets_ticket_change", args=[world_a.used.pk]))
    log_list = staff_client.get(reverse("admin:checkin_checkinlog_changelist"))

    title = f"Check-in AUSED01 at {USED_AT_SHOWN}"
    world_a.log.refresh_from_db()
    assert str(world_a.log) == title
    assert title in page.content.decode()
    # The log's own list shows the same local time in its columns.
    assert changelist_column(log_list, "at") == [USED_AT_SHOWN]


@pytest.mark.django_db
def test_holder_column_shows_the_name_and_any_linked_account(staff_client, world_a):
    Ticket.objects.filter(pk=world_a.ticket.pk).update(firstname="Malee", lastname="Jaidee")
    account = UserFactory(username="somchai")
    Ticket.objects.filter(pk=world_a.used.pk).update(
        firstname="Somchai", lastname="Dee", holder=account
    )

    response = staff_client.get(reverse(CHANGELIST))

    assert changelist_column(response, "holder") == [  # newest first
        "Somchai Dee (account somchai)",
        "Malee Jaidee",
    ]


@pytest.mark.django_db
def test_admin_edits_holder_fields_but_not_lifecycle(admin_client_a, world_a):
    url = reverse("admin:tickets_ticket_change", args=[world_a.ticket.pk])
    page = admin_client_a.get(url)
    form_fields = set(page.context["adminform"].form.fields)
    data = change_form_data(page)
    data.update({"firstname": "Malee", "phone": "0812345679", "status": "revoked"})
    # A gate checks the ticket in while the page is open.
    Ticket.objects.filter(pk=world_a.ticket.pk).update(status="used", used_at=world_a.log.at)

    response = admin_client_a.post(url, data)

    assert form_fields == {"firstname", "lastname", "email", "phone", "nfc_uid"}
    assert response.status_code == 302
    world_a.ticket.refresh_from_db()
    assert (world_a.ticket.firstname, world_a.ticket.phone) == ("Malee", "+66812345679")
    assert world_a.ticket.status == "used"  # neither the posted "revoked" nor the stale "active"


@pytest.mark.django_db
def test_ticket_form_rejects_bad_phone_and_taken_nfc_uid(admin_client_a, world_a):
    Ticket.objects.filter(pk=world_a.used.pk).update(nfc_uid="04AABB")
    url = reverse("admin:tickets_ticket_change", args=[world_a.ticket.pk])
    data = change_form_data(admin_client_a.get(url))
    data.update({"phone": "123", "nfc_uid": "04AABB"})

    response = admin_client_a.post(url, data)

    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {
        "phone": ["Enter a valid phone number."],
        "nfc_uid": ["Another ticket of this event is bound to this NFC tag."],
    }


@pytest.mark.django_db
def test_staff_cannot_edit_tickets(staff_client, world_a):
    url = reverse("admin:tickets_ticket_change", args=[world_a.ticket.pk])

    assert staff_client.post(url, {"firstname": "X"}).status_code == 403


@pytest.mark.django_db
def test_no_add_or_delete_for_tickets(super_client, world_a):
    assert super_client.get(reverse("admin:tickets_ticket_add")).status_code == 403
    url = reverse("admin:tickets_ticket_delete", args=[world_a.ticket.pk])
    assert super_client.get(url).status_code == 403


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("acode01", {"ACODE01"}),  # reference code, any case
        ("04FFEE", {"AUSED01"}),  # NFC UID
        ("malee@example", {"ACODE01"}),  # email, contains
        ("Somsri", {"ACODE01"}),  # name
        ("acode", set()),  # part of a code: codes match whole
        ("04FF", set()),  # part of a tag: tags match whole
        ("Somsri malee@example", {"ACODE01"}),  # each term matches
        ("Somsri nobody@example", set()),
        ('"malee@example.com"', {"ACODE01"}),  # a quoted term
    ],
)
def test_ticket_search(staff_client, world_a, world_b, query, expected):
    Ticket.objects.filter(pk=world_a.ticket.pk).update(
        email="malee@example.com", firstname="Somsri"
    )
    Ticket.objects.filter(pk=world_a.used.pk).update(nfc_uid="04FFEE")
    Ticket.objects.filter(pk=world_b.ticket.pk).update(
        email="malee@example.com", firstname="Somsri"
    )

    response = staff_client.get(reverse(CHANGELIST), {"q": query})

    assert {t.reference_code for t in response.context["cl"].result_list} == expected


@pytest.mark.django_db
def test_ticket_filters(staff_client, world_a):
    url = reverse(CHANGELIST)

    by_status = staff_client.get(url, {"status__exact": "used"}).context["cl"].result_list
    by_type = staff_client.get(url, {"ticket_type_id": world_a.ticket_type.pk}).context["cl"]
    by_kind = staff_client.get(url, {"kind__exact": "external"}).context["cl"].result_list

    assert [t.reference_code for t in by_status] == ["AUSED01"]
    assert {t.reference_code for t in by_type.result_list} == {"ACODE01", "AUSED01"}
    assert list(by_kind) == []


@pytest.mark.django_db
def test_unpaid_order_ticket_check_in_reports_order_not_paid(staff_client, world_a):
    pending = OrderFactory(event=world_a.event, status="pending")
    ticket = TicketFactory(
        event=world_a.event,
        ticket_type=world_a.ticket_type,
        order=pending,
        reference_code="APEND01",
    )

    response = _act(staff_client, "check_in", [ticket], index=0)

    assert messages_of(response) == ["1 not done: APEND01: The order of ticket APEND01 is pending."]


@pytest.mark.django_db
@pytest.mark.parametrize("field", ["firstname", "lastname"])
def test_ticket_form_refuses_a_line_break_in_a_name(admin_client_a, world_a, field):
    url = reverse("admin:tickets_ticket_change", args=[world_a.ticket.pk])
    data = change_form_data(admin_client_a.get(url))
    before = data[field]
    data[field] = "Evil\r\nBcc: x@evil.example"

    response = admin_client_a.post(url, data)

    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {
        field: ["Must not contain control, invisible or text-direction characters, or line breaks."]
    }
    world_a.ticket.refresh_from_db()
    assert getattr(world_a.ticket, field) == before
