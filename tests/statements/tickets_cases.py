"""Cases for `tickets.statements`: the event's ticket list, one ticket by a unique key, the
search of a caller, and the API's creation in one statement."""

import itertools
from datetime import timedelta

from django.utils import timezone

from events.models import Event, TicketType
from events.services import ticket_type_claim_places, ticket_type_claim_sql
from tests.factories import (
    EventFactory,
    FormFieldFactory,
    MembershipFactory,
    OrderFactory,
    OrganizerFactory,
    TicketFactory,
    TicketTypeFactory,
    UserFactory,
    WebhookEndpointFactory,
)
from tickets.email_status import TicketEmail
from tickets.models import Order, Ticket, TicketFormAnswer
from tickets.services.holders import Holder
from tickets.services.issuing import Issue, order_built, ticket_built
from tickets.statements.issue import Claim
from webhooks.models import WebhookEvent

from .support import Case


def _fields(instance, without=()) -> dict:
    fields = type(instance)._meta.concrete_fields
    return {f.attname: getattr(instance, f.attname) for f in fields if f.attname not in without}


def _loaded(ticket: Ticket | None, without=()):
    """A ticket as a statement loads it: its columns, its type's, whether it has answers."""
    if ticket is None:
        return None
    return _fields(ticket, without), _fields(ticket.ticket_type), ticket.has_answers


def _answered(ticket: Ticket) -> None:
    question = FormFieldFactory(event=ticket.event, label="Size", position=1)
    TicketFormAnswer.objects.create(ticket=ticket, field=question, value="M")


def _page_cases() -> list[Case]:
    event = EventFactory()
    ticket_type = TicketTypeFactory(event=event)
    tickets = [TicketFactory(event=event, ticket_type=ticket_type) for _ in range(5)]
    TicketFactory()  # another event's
    _answered(tickets[2])
    return [
        Case(
            label=f"offset={offset}",
            arguments=lambda offset=offset: {"event_id": event.pk, "offset": offset, "per_page": 2},
            result=lambda page: ([_loaded(t) for t in page[0]], page[1]),
        )
        for offset in (0, 1, 3, 5)
    ]


def _count_cases() -> list[Case]:
    event, empty = EventFactory(), EventFactory()
    for _ in range(3):
        TicketFactory(event=event)
    return [
        Case(label=f"event={e.title}", arguments=lambda e=e: {"event_id": e.pk})
        for e in (event, empty)
    ]


def _event_ticket_cases() -> list[Case]:
    event = EventFactory()
    ticket = TicketFactory(event=event, nfc_uid="04A1B2")
    _answered(ticket)
    plain = TicketFactory(event=event)
    keys = [
        {"id": ticket.pk},
        {"reference_code": ticket.reference_code},
        {"nfc_uid": "04A1B2"},
        {"reference_code": plain.reference_code},
        {"reference_code": "NOSUCH"},
    ]
    organizers = {"owner": event.organizer_id, "another": OrganizerFactory().pk}
    return [
        Case(
            label=f"{key} of {whose}",
            arguments=lambda key=key, organizer_id=organizer_id: {
                "event_id": event.pk,
                "organizer_id": organizer_id,
                "key": key,
            },
            result=_loaded,
        )
        for key, (whose, organizer_id) in itertools.product(keys, organizers.items())
    ]


def _caller_cases() -> list[Case]:
    """Every combination of limits, for tickets the user holds, bought, has by email, sees as
    a member, and does not see at all."""
    organizer, other_organizer = OrganizerFactory(), OrganizerFactory()
    user = UserFactory(email="fan@example.com")
    event = EventFactory(organizer=organizer)
    MembershipFactory(user=user, organizer=other_organizer)
    tickets = [
        TicketFactory(event=event, holder=user),
        TicketFactory(event=event, order=OrderFactory(event=event, buyer=user)),
        TicketFactory(event=event, order=OrderFactory(event=event, buyer_email="FAN@example.com")),
        TicketFactory(event=event, email="Fan@Example.com"),
        TicketFactory(event=event),
        TicketFactory(event=EventFactory(organizer=other_organizer)),
    ]
    _answered(tickets[0])
    limits = itertools.product(
        (None, organizer.pk, other_organizer.pk),
        (None, user.pk),
        (None, "fan@example.com"),
        (False, True),
    )
    cases = []
    for n, (ticket, limit) in enumerate(itertools.product(tickets, limits)):
        values = dict(zip(("organizer_id", "user_id", "email", "member"), limit, strict=True))
        values |= {"event_id": ticket.event_id, "reference_code": ticket.reference_code}
        cases.append(
            Case(
                label=f"{n}: {values}",
                arguments=lambda values=values: values,
                result=lambda found: [_loaded(t) for t in found],
            )
        )
    return cases


# What two runs of one creation never share: keys, and what the database stamps.
_OWN = {"id", "order_id", "page_token", "created_at", "updated_at", "change_xid", "change_seq"}
_CLAIM = Claim(sql=ticket_type_claim_sql(name="claim"), places=ticket_type_claim_places)
_HOLDER = Holder(firstname="Anan", lastname="Wong", email="anan@example.com", phone="+66812345678")


def _issue_case(label, *, ticket_type, organizer_id, via_api=True, notify=True, email=True):
    event_id = ticket_type.event_id
    holder = _HOLDER if email else Holder(**{**_HOLDER.__dict__, "email": ""})
    now = timezone.now()

    def arguments():
        order = order_built(event_id=event_id, holder=holder, now=now)
        issue = Issue(ticket_type=ticket_type, holder=holder, reference_code="TWIN01")
        ticket = ticket_built(event_id=event_id, issue=issue, order=order, via_api=via_api, now=now)
        return {
            "claim": _CLAIM,
            "organizer_id": organizer_id,
            "order": order,
            "ticket": ticket,
            "notify": notify,
        }

    def state():
        claimed = TicketType.objects.get(pk=ticket_type.pk)
        return (
            (claimed.sold_count, claimed.api_sold_count),
            [_fields(t, _OWN) for t in Ticket.objects.filter(event_id=event_id)],
            [_fields(o, {"id", "created_at", "updated_at"}) for o in Order.objects.all()],
            list(TicketEmail.objects.values_list("status", "recipient")),
            list(WebhookEvent.objects.values_list("organizer_id", "type")),
        )

    return Case(label=label, arguments=arguments, result=lambda t: _loaded(t, _OWN), state=state)


def _issue_cases() -> list[Case]:
    event = EventFactory()
    WebhookEndpointFactory(organizer=event.organizer, event_types=["ticket.created"])
    quiet = EventFactory()  # no endpoint
    past = timezone.now() - timedelta(days=1)
    ended = EventFactory(organizer=event.organizer, start_at=past, end_at=past)
    draft = EventFactory(organizer=event.organizer, status=Event.Status.DRAFT)
    room = TicketTypeFactory(event=event, quantity=5, api_quota=2)
    owner = event.organizer_id
    return [
        _issue_case("room", ticket_type=room, organizer_id=owner),
        _issue_case("not through the API", ticket_type=room, organizer_id=owner, via_api=False),
        _issue_case("no email asked", ticket_type=room, organizer_id=owner, notify=False),
        _issue_case("no address", ticket_type=room, organizer_id=owner, email=False),
        _issue_case(
            "no endpoint",
            ticket_type=TicketTypeFactory(event=quiet),
            organizer_id=quiet.organizer_id,
        ),
        _issue_case(
            "full",
            ticket_type=TicketTypeFactory(event=event, quantity=1, sold_count=1),
            organizer_id=owner,
        ),
        _issue_case(
            "API quota used",
            ticket_type=TicketTypeFactory(event=event, api_quota=1, api_sold_count=1),
            organizer_id=owner,
        ),
        _issue_case("another organizer's", ticket_type=room, organizer_id=quiet.organizer_id),
        _issue_case("ended", ticket_type=TicketTypeFactory(event=ended), organizer_id=owner),
        _issue_case("draft", ticket_type=TicketTypeFactory(event=draft), organizer_id=owner),
        _issue_case(
            "another event's type",
            ticket_type=TicketType(pk=TicketTypeFactory(event=quiet).pk, event_id=event.pk),
            organizer_id=owner,
        ),
    ]


CASES = {
    "tickets.statements.reads.event_ticket_page": _page_cases,
    "tickets.statements.reads.event_ticket_count": _count_cases,
    "tickets.statements.reads.event_ticket": _event_ticket_cases,
    "tickets.statements.reads.caller_ticket": _caller_cases,
    "tickets.statements.issue.ticket_issue": _issue_cases,
}
