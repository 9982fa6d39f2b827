"""POST .../events/{e}/tickets: creation, idempotent replay, quotas, access (CONTRACT §7)."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.core import mail
from django.utils import timezone

from events.models import Event
from tests.factories import EventFactory, TicketFactory, TicketTypeFactory
from tests.support import TokenClient, mint_token
from tests.task_support import run_due_tasks
from tickets.codes import REFERENCE_CODE_ALPHABET
from tickets.models import Order, Ticket

from .helpers import client_for, db_state, invalidate_url, tickets_url

pytestmark = pytest.mark.django_db

HOLDER = {
    "firstname": "Somsak",
    "lastname": "Jaidee",
    "email": "somsak@example.com",
    "phone": "0812345678",
}


@pytest.fixture
def client(user_token) -> TokenClient:
    return client_for(user_token)


def create(client, event, ticket_type, fmt=None, **fields):
    body = {"ticket_type_id": ticket_type.id, **HOLDER, **fields}
    return client.post(tickets_url(event), body, format=fmt)


def test_ticket_create_issues_a_paid_external_order_and_ticket(
    client, event, ticket_type, member, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = create(
            client,
            event,
            ticket_type,
            firstname="  Somsak ",
            lastname=" Jaidee",
            email=" somsak@example.com ",
            external_id=" ext-1 ",
        )

    assert response.status_code == 200, response.json()
    body = response.json()
    ticket = Ticket.objects.get()
    assert body["success"] is True
    assert body["idempotent"] is False
    assert body["ticket"] == {
        "id": ticket.id,
        "order_id": ticket.order_id,
        "event_id": event.id,
        "status": "active",
        "firstname": "Somsak",
        "lastname": "Jaidee",
        "phone": "+66812345678",
        "email": "somsak@example.com",
        "reference_code": ticket.reference_code,
        "ticket_url": f"{settings.SITE_URL}/t/{ticket.page_token}",
        "kind": "external",
        "external_id": "ext-1",
        "revoke_note": None,
        "ticket_type": {
            "id": str(ticket_type.id),
            "name": "Regular",
            "price": "1500.00",
            "price_satangs": "150000",
            "kind": "normal",
        },
        "price_label": "฿1,500.00",
        "forms": [],
        "created_at": body["ticket"]["created_at"],
        "updated_at": body["ticket"]["updated_at"],
        "used_at": None,
        "registered_at": body["ticket"]["registered_at"],
    }
    assert body["ticket"]["registered_at"] is not None
    assert len(ticket.reference_code) == 8
    assert set(ticket.reference_code) <= set(REFERENCE_CODE_ALPHABET)
    assert ticket.issued_via_api is True
    order = ticket.order
    assert (order.status, order.kind, order.paid_at is not None) == ("paid", "external", True)
    assert (order.buyer_firstname, order.buyer_lastname, order.buyer_email) == (
        "Somsak",
        "Jaidee",
        "somsak@example.com",
    )
    assert (order.buyer_phone, order.buyer_phone_country) == ("+66812345678", "TH")
    ticket_type.refresh_from_db()
    assert (ticket_type.sold_count, ticket_type.api_sold_count) == (1, 1)
    assert run_due_tasks() == 1  # the email task
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == ["somsak@example.com"]


@pytest.mark.parametrize("fmt", ["json", "multipart", None])
def test_ticket_create_accepts_json_multipart_and_form_bodies(client, event, ticket_type, fmt):
    if fmt is None:  # application/x-www-form-urlencoded, as the spec shows
        from urllib.parse import urlencode

        response = client.post(
            tickets_url(event),
            urlencode({"ticket_type_id": ticket_type.id, **HOLDER}),
            content_type="application/x-www-form-urlencoded",
        )
    else:
        response = create(client, event, ticket_type, fmt=fmt)
    assert response.status_code == 200, response.json()
    assert response.json()["ticket"]["phone"] == "+66812345678"
    assert Ticket.objects.count() == 1


def test_ticket_create_token_in_form_body_works(api_client, event, ticket_type, user_token):
    response = api_client.post(
        tickets_url(event), {"ticket_type_id": ticket_type.id, **HOLDER, "access_token": user_token}
    )
    assert response.status_code == 200, response.json()


def test_ticket_create_custom_reference_code_is_trimmed_and_upper_cased(client, event, ticket_type):
    response = create(client, event, ticket_type, reference_code="  vip-row-a1 ")
    assert response.status_code == 200
    assert response.json()["ticket"]["reference_code"] == "VIP-ROW-A1"
    assert Ticket.objects.get().reference_code == "VIP-ROW-A1"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("reference_code", "AB12"),  # too short
        ("reference_code", "A" * 33),  # too long
        ("reference_code", "ABC_123"),  # underscore
        ("reference_code", "ÀBCDEFG"),  # not A-Z
        ("phone", "123"),
        ("phone", "not a phone"),
        ("phone", "+6612"),
        ("email", "not-an-email"),
        ("email", "a@b"),
        ("firstname", "   "),
        ("lastname", ""),
        ("firstname", "x" * 151),
        ("external_id", "x" * 65),
        ("ticket_type_id", "abc"),
        ("ticket_type_id", "2147483648"),
        ("ticket_type_id", "0"),
        ("firstname", "nul\x00byte"),
    ],
)
def test_ticket_create_rejects_malformed_fields_with_400_and_changes_nothing(
    client, event, ticket_type, field, value
):
    before = db_state(event)
    response = create(client, event, ticket_type, fmt="json", **{field: value})
    assert response.status_code == 400
    body = response.json()
    assert body["success"] is False
    assert body["error"] == "invalid_parameters"
    assert list(body["fields"]) == [field]
    assert db_state(event) == before


def test_ticket_create_missing_fields_are_all_named(client, event):
    response = client.post(tickets_url(event), {}, format="json")
    assert response.status_code == 400
    assert set(response.json()["fields"]) == {
        "ticket_type_id",
        "firstname",
        "lastname",
        "email",
        "phone",
    }


def test_ticket_create_malformed_json_is_400(client, event):
    response = client.post(tickets_url(event), "{not json", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_parameters"


def test_ticket_create_phone_normalised_to_e164_from_international_formats(
    client, event, ticket_type
):
    response = create(client, event, ticket_type, phone="+1 (415) 555-2671")
    assert response.status_code == 200
    assert response.json()["ticket"]["phone"] == "+14155552671"
    assert Order.objects.get().buyer_phone_country == "US"


def test_ticket_create_ticket_type_of_another_event_is_404(client, event, organizer):
    other_type = TicketTypeFactory(event=EventFactory(organizer=organizer))
    before = db_state(event)
    response = create(client, event, other_type)
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"
    assert db_state(event) == before


def test_ticket_create_event_of_another_organizer_is_404(client, other_organizer):
    event = EventFactory(organizer=other_organizer)
    ticket_type = TicketTypeFactory(event=event)
    response = client.post(
        f"/api/public/organizers/{event.organizer_id}/events/{event.id}/tickets",
        {"ticket_type_id": ticket_type.id, **HOLDER},
    )
    # The path's organizer is not the token's: 401 organizer_mismatch (CONTRACT §3 step 5).
    assert response.status_code == 401
    assert response.json()["error"] == "organizer_mismatch"
    assert Ticket.objects.count() == 0


def test_ticket_create_unknown_event_is_404(client, organizer, ticket_type):
    response = client.post(
        f"/api/public/organizers/{organizer.id}/events/999999/tickets",
        {"ticket_type_id": ticket_type.id, **HOLDER},
    )
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"


@pytest.mark.parametrize(
    "event_kwargs",
    [
        {"status": Event.Status.DRAFT},
        {"status": Event.Status.ENDED},
        {
            "status": Event.Status.ACTIVE,
            "start_at": timezone.now() - timedelta(days=2),
            "end_at": timezone.now() - timedelta(days=1),
        },
    ],
    ids=["draft", "ended", "active-but-over"],
)
def test_ticket_create_on_inactive_event_is_422(client, organizer, event_kwargs):
    event = EventFactory(organizer=organizer, **event_kwargs)
    ticket_type = TicketTypeFactory(event=event)
    before = db_state(event)
    response = create(client, event, ticket_type)
    assert response.status_code == 422
    assert response.json()["error"] == "event_not_active"
    assert db_state(event) == before


def test_ticket_create_api_quota_exceeded_is_422_and_changes_nothing(client, event):
    ticket_type = TicketTypeFactory(event=event, quantity=10, api_quota=1)
    assert create(client, event, ticket_type, email="first@example.com").status_code == 200
    before = db_state(event)
    response = create(client, event, ticket_type, email="second@example.com")
    assert response.status_code == 422
    assert response.json()["error"] == "quota_exceeded"
    assert db_state(event) == before
    ticket_type.refresh_from_db()
    assert (ticket_type.sold_count, ticket_type.api_sold_count) == (1, 1)


def test_ticket_create_quantity_counts_tickets_sold_elsewhere(client, event):
    ticket_type = TicketTypeFactory(event=event, quantity=2, api_quota=None)
    TicketFactory.create_batch(2, event=event, ticket_type=ticket_type)
    response = create(client, event, ticket_type)
    assert response.status_code == 422
    assert response.json()["error"] == "quota_exceeded"
    assert Ticket.objects.filter(event=event).count() == 2


def test_ticket_create_revoked_ticket_frees_its_place(client, event, user_token):
    ticket_type = TicketTypeFactory(event=event, quantity=1, api_quota=1)
    first = create(client, event, ticket_type).json()["ticket"]
    assert create(client, event, ticket_type, email="b@example.com").status_code == 422
    revoke = client.post(invalidate_url(event), {"ticket_id": first["id"]})
    assert revoke.status_code == 200
    assert create(client, event, ticket_type, email="b@example.com").status_code == 200
    ticket_type.refresh_from_db()
    assert (ticket_type.sold_count, ticket_type.api_sold_count) == (1, 1)


def test_ticket_create_replay_with_same_data_returns_the_same_ticket(
    client, event, ticket_type, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        first = create(client, event, ticket_type, external_id="ORDER-77")
    before = db_state(event)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        # Same holder, written differently: trimmed names, email case, local phone format.
        again = create(
            client,
            event,
            ticket_type,
            external_id="ORDER-77",
            firstname=" Somsak",
            email="SOMSAK@example.com",
            phone="+66 81 234 5678",
        )
    assert again.status_code == 200
    assert again.json() == {"success": True, "idempotent": True, "ticket": first.json()["ticket"]}
    assert db_state(event) == before
    assert callbacks == []
    assert run_due_tasks() == 1  # the first creation's email task only
    assert len(mail.outbox) == 1


def test_ticket_create_replay_still_answers_when_the_quota_is_now_full(client, event):
    ticket_type = TicketTypeFactory(event=event, quantity=1)
    first = create(client, event, ticket_type, external_id="LAST-SEAT")
    again = create(client, event, ticket_type, external_id="LAST-SEAT")
    assert again.status_code == 200
    assert again.json()["idempotent"] is True
    assert again.json()["ticket"]["id"] == first.json()["ticket"]["id"]


@pytest.mark.parametrize(
    "changes",
    [
        {"firstname": "Other"},
        {"email": "other@example.com"},
        {"phone": "0899999999"},
        {"reference_code": "OTHER-CODE"},
        {"ticket_type": True},
    ],
    ids=["firstname", "email", "phone", "reference_code", "ticket_type"],
)
def test_ticket_create_replay_with_different_data_is_409(client, event, ticket_type, changes):
    create(client, event, ticket_type, external_id="ORDER-88", reference_code="FIRST-CODE")
    before = db_state(event)
    target_type = ticket_type
    if changes.pop("ticket_type", False):
        target_type = TicketTypeFactory(event=event, name="VIP")
        before = db_state(event)
    response = create(client, event, target_type, external_id="ORDER-88", **changes)
    assert response.status_code == 409
    assert response.json()["error"] == "duplicate_external_id"
    assert db_state(event) == before


def test_ticket_create_same_external_id_in_another_event_is_a_new_ticket(
    client, event, ticket_type, organizer
):
    create(client, event, ticket_type, external_id="SHARED")
    other_event = EventFactory(organizer=organizer)
    other_type = TicketTypeFactory(event=other_event)
    response = create(client, other_event, other_type, external_id="SHARED")
    assert response.status_code == 200
    assert response.json()["idempotent"] is False
    assert Ticket.objects.filter(external_id="SHARED").count() == 2


def test_ticket_create_taken_reference_code_is_409_and_frees_the_claim(client, event, ticket_type):
    TicketFactory(event=event, ticket_type=ticket_type, reference_code="TAKEN-01")
    before = db_state(event)
    response = create(client, event, ticket_type, reference_code="taken-01")
    assert response.status_code == 409
    assert response.json()["error"] == "duplicate_reference_code"
    assert db_state(event) == before  # counters included: the claim was rolled back


def test_ticket_create_blank_external_id_and_reference_code_mean_none(client, event, ticket_type):
    response = create(client, event, ticket_type, external_id="  ", reference_code="")
    assert response.status_code == 200
    ticket = Ticket.objects.get()
    assert ticket.external_id is None
    assert len(ticket.reference_code) == 8


def test_ticket_create_suppress_notifications_sends_no_email(
    client, event, ticket_type, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = create(client, event, ticket_type, suppress_notifications="true")
    assert response.status_code == 200
    assert callbacks == []
    assert run_due_tasks() == 0
    assert mail.outbox == []


def test_ticket_create_with_application_token_is_403_user_token_required(
    app_token, event, ticket_type
):
    response = create(client_for(app_token), event, ticket_type)
    assert response.status_code == 403
    assert response.json()["error"] == "user_token_required"
    assert Ticket.objects.count() == 0


def test_ticket_create_without_organizer_scope_is_403(application, member, event, ticket_type):
    token = mint_token(application=application, user=member, scope="public")
    response = create(client_for(token), event, ticket_type)
    assert response.status_code == 403
    assert response.json()["error"] == "insufficient_scope"


def test_ticket_create_by_non_member_is_403(application, buyer, event, ticket_type):
    token = mint_token(application=application, user=buyer, scope="public organizer")
    response = create(client_for(token), event, ticket_type)
    assert response.status_code == 403
    assert response.json()["error"] == "not_organizer_member"


def test_ticket_create_without_token_is_401(api_client, event, ticket_type):
    response = api_client.post(tickets_url(event), {"ticket_type_id": ticket_type.id, **HOLDER})
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_token"
    assert Ticket.objects.count() == 0


def test_event_tickets_get_still_accepts_an_application_token(app_token, event):
    response = client_for(app_token).get(tickets_url(event))
    assert response.status_code == 200
