"""`ticket.checked_in` from the gate's one statement (PostgreSQL, CONTRACT §13): with an endpoint
subscribed, the admission still costs one autocommit statement, which also records the event in
the outbox (our table) with the rows it admitted; its dispatch renders the API's Ticket as
admitted, and a worker delivers it signed."""

import json

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult
from standardwebhooks.webhooks import Webhook

from checkin.services import gate, scans
from checkin.services import statements as admission
from events.models import TicketType
from tests.factories import (
    EventFactory,
    FormFieldFactory,
    OrderFactory,
    TicketFactory,
    TicketTypeFactory,
)
from tests.support import TokenClient, mint_token
from tests.task_support import run_due_tasks
from tests.write_api.helpers import checkin_url
from tickets.exceptions import TicketAlreadyUsed, TicketRevoked
from tickets.keys import TicketKey
from tickets.models import Ticket, TicketFormAnswer
from tickets.serializers import TicketSerializer
from tickets.services.common import Actor
from tickets.services.publishing import (
    Type,
    ticket_checked_in_publish,
    ticket_event_record,
    ticket_row_render,
)
from webhooks import renderers
from webhooks.models import WebhookDelivery, WebhookEndpoint, WebhookEvent
from webhooks.outbox import webhook_events_complete, webhook_outbox_relay
from webhooks.renderers import renderer_for
from webhooks.services import webhook_endpoint_create

from .helpers import endpoint_for, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.usefixtures("private_urls_allowed")]

URL = "http://127.0.0.1:9/in"  # never sent to: only the worker test sends, to its receiver
PUBLISH = "ticket_checked_in_publish"


def _endpoint(organizer, event_types=("*",)) -> None:
    webhook_endpoint_create(organizer_id=organizer.id, url=URL, event_types=list(event_types))


def _holder_ticket(event, ticket_type) -> Ticket:
    ticket = TicketFactory(
        event=event,
        ticket_type=ticket_type,
        order=OrderFactory(event=event),
        firstname="สมชาย",
        lastname="Jaidee",
        email="somchai@example.com",
    )
    field = FormFieldFactory(event=event, label="T-shirt size")
    TicketFormAnswer.objects.create(ticket=ticket, field=field, value="L")
    return ticket


def _check_in(ticket: Ticket):
    return scans.ticket_check_in_at_gate(
        organizer_id=ticket.event.organizer_id,
        event_id=ticket.event_id,
        key=TicketKey.id(ticket.id),
        actor=Actor(),
    )


def _body(payload: dict) -> str:
    """The bytes a delivery sends (webhooks.delivering)."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


def _dispatch_without_sending() -> list[WebhookEvent]:
    """Relay the outbox and render its events here; no worker and no receiver: send nothing."""
    assert webhook_outbox_relay() >= 1
    ids = [pk for task in _dispatch_tasks() for pk in task.args_kwargs["args"][0]]
    return webhook_events_complete(ids)


def _dispatch_tasks() -> list[DBTaskResult]:
    return list(DBTaskResult.objects.filter(task_path__endswith="webhook_events_dispatch"))


@pytest.fixture
def locked_path_not_expected(monkeypatch):
    def not_expected(**kwargs):
        raise AssertionError("the admission statement should have admitted the ticket")

    monkeypatch.setattr(gate, "ticket_check_in", not_expected)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("locked_path_not_expected")
def test_an_admission_with_an_endpoint_subscribed_is_one_autocommit_statement(event, ticket_type):
    _endpoint(event.organizer, ["ticket.checked_in"])
    ticket = TicketFactory(event=event, ticket_type=ticket_type)

    with CaptureQueriesContext(connection) as context:
        result = _check_in(ticket)

    [statement] = [q["sql"] for q in context.captured_queries]  # no BEGIN, no COMMIT
    assert WebhookEvent._meta.db_table in statement
    assert DBTaskResult._meta.db_table not in statement  # the outbox is ours
    assert result.ticket.status == "used"
    recorded = WebhookEvent.objects.get()
    assert recorded.payload == {
        "id": recorded.id,
        "type": "ticket.checked_in",
        "created_at": timezone.localtime(result.ticket.updated_at).isoformat(),
        "organizer_id": event.organizer_id,
        "event_id": event.id,
        "data": None,
    }
    assert recorded.dispatched_at is None
    assert renderer_for(recorded.type) is ticket_row_render  # chosen by the type, in code
    assert recorded.source["ticket"]["id"] == ticket.pk
    assert recorded.source["ticket"]["status"] == "used"
    assert recorded.source["ticket_type"]["id"] == ticket_type.pk
    assert not DBTaskResult.objects.exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("locked_path_not_expected")
def test_a_check_in_request_costs_the_same_statements_with_an_endpoint_as_without(
    event, ticket_type, application, member
):
    client = TokenClient(mint_token(application=application, user=member, scope="public organizer"))
    tickets = TicketFactory.create_batch(4, event=event, ticket_type=ticket_type)

    def statements(warm_up: Ticket, counted: Ticket) -> list[str]:
        assert client.post(checkin_url(warm_up)).status_code == 200  # token, subscriptions
        with CaptureQueriesContext(connection) as context:
            assert client.post(checkin_url(counted)).status_code == 200
        return [q["sql"] for q in context.captured_queries]

    without = statements(*tickets[:2])
    _endpoint(event.organizer)
    with_endpoint = statements(*tickets[2:])

    assert len(with_endpoint) == len(without)
    assert not {"BEGIN", "COMMIT"} & set(with_endpoint)
    assert WebhookEvent._meta.db_table in with_endpoint[-1]
    # The warm-up's and the counted one's, in the outbox.
    assert WebhookEvent.objects.filter(dispatched_at=None).count() == 2


@pytest.mark.django_db
@pytest.mark.usefixtures("locked_path_not_expected")
def test_the_event_carries_the_ticket_as_admitted_byte_for_byte(event, ticket_type):
    _endpoint(event.organizer)
    ticket = _holder_ticket(event, ticket_type)

    admitted = _check_in(ticket).ticket
    as_admitted = TicketSerializer().to_representation(admitted)
    with transaction.atomic():  # the same Ticket recorded as every other service records it
        ticket_event_record(
            organizer_id=event.organizer_id, ticket=admitted, type=Type.TICKET_CHECKED_IN
        )
    # Changed after the admission, before the dispatch: the payload does not show it.
    Ticket.objects.filter(pk=ticket.pk).update(firstname="Later")
    TicketType.objects.filter(pk=ticket_type.pk).update(name="Renamed later")
    _dispatch_without_sending()

    by_statement, by_orm = WebhookEvent.objects.order_by("created_at")
    assert by_statement.payload["data"] == {"ticket": as_admitted}
    assert by_statement.source is None  # rendered: the rows are not kept
    assert _body(by_statement.payload["data"]) == _body(by_orm.payload["data"])
    assert as_admitted["forms"] == [
        {"id": ticket.form_answers.get().field_id, "label": "T-shirt size", "value": "L"}
    ]
    assert (as_admitted["firstname"], as_admitted["ticket_type"]["name"]) == (
        "สมชาย",
        ticket_type.name,
    )
    assert by_statement.created_at == admitted.updated_at
    assert by_statement.payload == {
        "id": by_statement.id,
        "type": "ticket.checked_in",
        "created_at": timezone.localtime(by_statement.created_at).isoformat(),
        "organizer_id": event.organizer_id,
        "event_id": event.id,
        "data": {"ticket": as_admitted},
    }


@pytest.mark.django_db
def test_a_rejected_admission_writes_no_event_from_the_statement(event, ticket_type):
    _endpoint(event.organizer)
    used = TicketFactory(
        event=event, ticket_type=ticket_type, status="used", used_at=timezone.now()
    )
    revoked = TicketFactory(event=event, ticket_type=ticket_type, status="revoked")
    admit = {
        "organizer_id": event.organizer_id,
        "event_id": event.id,
        "actor": Actor(),
        "at": timezone.now(),
        "note": "",
        "publish": True,
    }

    for ticket in (used, revoked):
        assert admission.admitted_ticket(key=TicketKey.id(ticket.id), **admit) is None
    for ticket, error in ((used, TicketAlreadyUsed), (revoked, TicketRevoked)):
        with pytest.raises(error):
            _check_in(ticket)

    assert not WebhookEvent.objects.exists()
    assert not DBTaskResult.objects.exists()


@pytest.mark.django_db
def test_a_second_admission_of_the_ticket_writes_no_second_event(event, ticket_type):
    """The loser of two gates scanning at once: its statement finds the ticket used."""
    _endpoint(event.organizer)
    ticket = TicketFactory(event=event, ticket_type=ticket_type)
    admit = {
        "organizer_id": event.organizer_id,
        "event_id": event.id,
        "key": TicketKey.id(ticket.id),
        "actor": Actor(),
        "at": timezone.now(),
        "note": "",
        "publish": True,
    }

    assert admission.admitted_ticket(**admit) is not None
    assert admission.admitted_ticket(**admit) is None

    assert WebhookEvent.objects.count() == 1


def racing_render(events):
    """A renderer that loses to another run of the dispatch (with the real renderer), which
    saves its own first."""
    ids = [event.pk for event in events]
    renderers._RENDERERS["ticket.checked_in"] = ticket_row_render
    webhook_events_complete(ids)  # the other run
    return {pk: {"ticket": "lost"} for pk in ids}


@pytest.mark.django_db
def test_a_dispatch_run_again_sends_the_body_saved_first(event, ticket_type, monkeypatch):
    """A worker lost mid-task runs it again, after the first run or beside it: the body saved
    first is the one every run sends."""
    _endpoint(event.organizer)
    ticket = _holder_ticket(event, ticket_type)
    _check_in(ticket)
    recorded = WebhookEvent.objects.get()
    monkeypatch.setitem(renderers._RENDERERS, "ticket.checked_in", racing_render)

    [first] = webhook_events_complete([recorded.pk])
    TicketFormAnswer.objects.filter(ticket=ticket).update(value="XL")
    [again] = webhook_events_complete([recorded.pk])  # after both

    saved = WebhookEvent.objects.get().payload
    assert saved["data"]["ticket"]["forms"][0]["value"] == "L"
    assert _body(first.payload) == _body(again.payload) == _body(saved)  # the bytes


@pytest.mark.django_db
def test_a_task_queued_by_a_gate_before_the_outbox_still_sends_its_event(event, ticket_type):
    """A deploy in progress: a gate of the previous release queued `ticket_checked_in_publish`
    with the event's envelope and the admitted rows; it records the event in the outbox."""
    _endpoint(event.organizer)
    ticket = _holder_ticket(event, ticket_type)
    as_admitted = TicketSerializer().to_representation(_check_in(ticket).ticket)
    recorded = WebhookEvent.objects.get()
    pk, envelope, admitted = recorded.pk, recorded.payload, recorded.source
    recorded.delete()

    ticket_checked_in_publish.enqueue(pk, admitted, envelope)
    assert run_due_tasks(name_contains=PUBLISH) == 1
    ticket_checked_in_publish.call(pk, admitted, envelope)  # run twice: one event
    [sent] = _dispatch_without_sending()

    assert sent.payload == {**envelope, "data": {"ticket": as_admitted}}
    assert sent.pk == pk


def test_a_worker_delivers_the_event_signed_and_retries_the_same_body(
    shared_database, manager, receiver, workers
):
    _, secret = endpoint_for(receiver, manager, ["ticket.checked_in"])
    receiver.statuses = [503]  # the first attempt fails; the retry is due a second later
    event = EventFactory(organizer=manager)
    ticket = _holder_ticket(event, TicketTypeFactory(event=event))
    as_admitted = TicketSerializer().to_representation(_check_in(ticket).ticket)
    workers.start()

    delivered = WebhookDelivery.objects.filter(status="delivered", attempt_count=2)
    dispatch = DBTaskResult.objects.filter(task_path__endswith="webhook_events_dispatch")
    wait_for(
        lambda: delivered.exists() and dispatch.filter(status=TaskResultStatus.SUCCESSFUL).exists(),
        timeout=30,
        what="delivered at the second attempt, the dispatch task finished",
        log=workers.log,
    )

    recorded = WebhookEvent.objects.get()
    first, retry = receiver.requests
    assert first["body"] == retry["body"] == _body(recorded.payload)
    for request in (first, retry):
        assert request["headers"]["webhook-id"] == recorded.id
        payload = Webhook(secret).verify(request["body"], request["headers"])
        assert payload["data"] == {"ticket": as_admitted}
    assert [t.status for t in dispatch] == [TaskResultStatus.SUCCESSFUL]
    assert recorded.dispatched_at is not None and recorded.source is None


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("locked_path_not_expected")
def test_the_statement_reads_the_subscriptions_another_process_just_registered(event, ticket_type):
    """No process remembers subscriptions: the admission statement itself asks whether an
    endpoint wants the event, so an endpoint committed by another server is heard at once."""
    first, second, third = TicketFactory.create_batch(3, event=event, ticket_type=ticket_type)
    _check_in(first)
    assert not WebhookEvent.objects.exists()

    other_types = WebhookEndpoint.objects.create(
        organizer=event.organizer, url=URL, event_types=["ticket.revoked"], secret_encrypted=""
    )
    _check_in(second)
    assert not WebhookEvent.objects.exists()

    WebhookEndpoint.objects.filter(pk=other_types.pk).update(event_types=["ticket.checked_in"])
    _check_in(third)
    [recorded] = WebhookEvent.objects.all()
    assert (recorded.type, recorded.source["ticket"]["id"]) == ("ticket.checked_in", third.pk)


@pytest.mark.django_db(transaction=True)
def test_the_api_creation_reads_the_subscriptions_another_process_just_registered(
    event, ticket_type, application, member
):
    client = TokenClient(mint_token(application=application, user=member, scope="public organizer"))
    url = f"/api/public/organizers/{event.organizer_id}/events/{event.id}/tickets"
    holder = {"ticket_type_id": ticket_type.id, "lastname": "Srisuk", "phone": "0891234567"}

    def create(firstname: str) -> int:
        body = holder | {"firstname": firstname, "email": f"{firstname}@example.com"}
        response = client.post(url, body, format="json")
        assert response.status_code == 200, response.json()
        return response.json()["ticket"]["id"]

    create("before")
    WebhookEndpoint.objects.create(
        organizer=event.organizer, url=URL, event_types=["*"], secret_encrypted=""
    )
    created = create("after")

    [recorded] = WebhookEvent.objects.all()
    assert (recorded.type, recorded.source["ticket"]["id"]) == ("ticket.created", created)
