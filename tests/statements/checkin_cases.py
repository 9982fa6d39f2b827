"""Cases for `checkin.statements`: the scan-id claim, the gate's one-statement admission
against the locked path (and with a scan id, recorded under it), a chunk's ticket writes, the
sync feed's page and the live counts."""

from datetime import UTC, datetime, timedelta

from checkin.models import CheckInLog, ScanRecord, TicketCheckIn
from checkin.services.admission_rows import ScanTaken
from events.models import Event
from tests.factories import (
    CheckInTypeFactory,
    EventFactory,
    FormFieldFactory,
    OrganizerFactory,
    TicketFactory,
    TicketTypeFactory,
)
from ticketing.api.exceptions import ApplicationError
from tickets.exceptions import ticket_body
from tickets.keys import TicketKey
from tickets.models import Order, Ticket, TicketFormAnswer
from tickets.selectors import TICKET_IMAGE, ticket_from_image
from tickets.services.common import Actor

from .support import Case

AT = datetime(2026, 1, 10, 8, 15, tzinfo=UTC)


def _claim(*, taken: bool, owned: bool) -> Case:
    event = EventFactory()
    if taken:
        ScanRecord.objects.create(event=event, scan_id="gate-1-0010", success=True, result={})
    organizer_id = event.organizer_id if owned else OrganizerFactory().id
    return Case(
        label=f"taken={taken} owned={owned}",
        arguments=lambda: {
            "organizer_id": organizer_id,
            "record": ScanRecord(event=event, scan_id="gate-1-0010", success=False, result={}),
        },
        result=lambda claimed: claimed is not None,
        state=lambda: sorted(
            ScanRecord.objects.filter(event=event).values_list("scan_id", "success")
        ),
    )


# --- The admission --------------------------------------------------------------------------


def _outcome(outcome):
    """What the gate answers: the refusal (code, message, the ticket as its body shows it) or
    the admission."""
    if isinstance(outcome, ApplicationError):
        return ("refused", outcome.code, outcome.message, outcome.extra)
    types = [
        (r.check_in_type_id, r.check_in_type_name, r.used_at, r.success, r.error, r.code)
        for r in outcome.check_in_results
    ]
    return ("admitted", outcome.ticket.pk, outcome.ticket.status, outcome.ticket.used_at, types)


def _written(event: Event):
    return (
        sorted(Ticket.objects.filter(event=event).values_list("id", "status", "used_at")),
        sorted(
            TicketCheckIn.objects.filter(ticket__event=event).values_list(
                "ticket_id", "check_in_type_id", "used_at"
            )
        ),
        sorted(
            CheckInLog.objects.filter(event=event).values_list(
                "ticket_id", "check_in_type_id", "action", "at", "note", "scan_id", "error"
            ),
            key=repr,
        ),
    )


def _admission(label: str, broken=None, *, types: int = 0, requested=None, key=None) -> Case:
    """A ticket (made to break a rule by `broken`), `types` check-in types of its event, and a
    check-in of the requested ones (indexes into them; 9: an unknown type)."""
    ticket = TicketFactory()
    event = ticket.event
    made = [CheckInTypeFactory(event=event) for _ in range(types)]
    if types > 1:  # the second type is limited to another ticket type
        made[1].ticket_types.set([TicketTypeFactory(event=event)])
    if broken is not None:
        broken(ticket)
    type_ids = [made[n].id if n < len(made) else 999_999 for n in requested or []]
    return Case(
        label=label,
        arguments=lambda: {
            "organizer_id": event.organizer_id,
            "event_id": event.id,
            "key": key(ticket) if key else TicketKey.id(ticket.pk),
            "actor": Actor(),
            "used_at": AT,
            "note": "gate 4",
            "scan_id": "gate-4-0001",
            "check_in_type_ids": type_ids,
        },
        result=_outcome,
        state=lambda: _written(event),
    )


def _update(**fields):
    def broken(ticket):
        if "order" in fields:
            Order.objects.filter(pk=ticket.order_id).update(status=fields["order"])
        elif "event" in fields:
            Event.objects.filter(pk=ticket.event_id).update(status=fields["event"])
        else:
            Ticket.objects.filter(pk=ticket.pk).update(**fields)

    return broken


def _admissions():
    used = _update(status=Ticket.Status.USED, used_at=AT - timedelta(hours=1))
    return [
        _admission("admitted"),
        _admission(
            "by reference code", key=lambda t: TicketKey("reference_code", t.reference_code)
        ),
        _admission("no such ticket", key=lambda t: TicketKey.id(0)),
        _admission("already used", used),
        _admission("revoked", _update(status=Ticket.Status.REVOKED)),
        _admission("order unpaid", _update(order=Order.Status.PENDING)),
        _admission("draft event", _update(event=Event.Status.DRAFT)),
        _admission("types required", types=2),
        _admission("types", types=2, requested=[0, 1, 9, 0]),
        _admission("types, used before", used, types=1, requested=[0]),
        _admission("types, none admitted", types=2, requested=[1, 9]),
    ]


def _replayed_ticket(result: dict):
    """What a replay shows of the ticket whose image a record keeps (`scans.online_body`),
    but its `updated_at`: the statement writes its own time, the locked path's save another.
    A record without an image as it is."""
    if TICKET_IMAGE not in result:
        return result
    body = ticket_body(ticket_from_image(result, using="default"))
    return {key: value for key, value in body.items() if key != "updated_at"}


def _answered(ticket: Ticket) -> None:
    TicketFormAnswer.objects.create(
        ticket=ticket, field=FormFieldFactory(event=ticket.event), value="L"
    )


def _scan(label: str, *, taken: bool = False, owned: bool = True, **admission) -> Case:
    """`_admission`'s check-in, by the statement that records it under its scan id."""
    case = _admission(label, **admission)
    event_id = case.arguments()["event_id"]
    event = Event.objects.get(pk=event_id)
    if taken:
        ScanRecord.objects.create(event=event, scan_id="gate-4-0001", success=True, result={})
    organizer_id = event.organizer_id if owned else OrganizerFactory().id

    def records():
        return [
            (*record, _replayed_ticket(result))
            for *record, result in ScanRecord.objects.filter(event=event).values_list(
                "scan_id", "action", "ticket_id", "success", "error", "status_code", "result"
            )
        ]

    return Case(
        label=label,
        arguments=lambda: case.arguments() | {"organizer_id": organizer_id},
        result=lambda outcome: "taken" if isinstance(outcome, ScanTaken) else _outcome(outcome),
        state=lambda: (case.state(), records()),
    )


def _scans():
    used = _update(status=Ticket.Status.USED, used_at=AT - timedelta(hours=1))
    return [
        _scan("admitted"),
        _scan("admitted, with form answers", broken=_answered),
        _scan("by reference code", key=lambda t: TicketKey("reference_code", t.reference_code)),
        _scan("no such ticket", key=lambda t: TicketKey.id(0)),
        _scan("already used", broken=used),
        _scan("types required", types=2),
        _scan("scan id taken", taken=True),
        _scan("scan id taken, ticket used", taken=True, broken=used),
        _scan("another organizer's event", owned=False),
    ]


# --- A chunk's tickets, the feed, the counts --------------------------------------------------


def _tickets_save() -> Case:
    event = EventFactory()
    ids = [TicketFactory(event=event).pk for _ in range(3)]

    def changed():
        tickets = list(Ticket.objects.filter(pk__in=ids).order_by("pk"))
        tickets[0].status, tickets[0].used_at = Ticket.Status.USED, AT
        tickets[1].status, tickets[1].used_at = Ticket.Status.ACTIVE, None
        for ticket in tickets:
            ticket.updated_at = AT
        return {"tickets": tickets[:2]}

    return Case(
        label="two of three tickets",
        arguments=changed,
        state=lambda: sorted(
            Ticket.objects.filter(pk__in=ids).values_list("id", "status", "used_at", "updated_at")
        ),
    )


def _feed(*, below: bool, limit: int) -> Case:
    event = EventFactory()
    for _ in range(4):
        TicketFactory(event=event)
    middle = Ticket.objects.filter(event=event).order_by("change_xid", "change_seq")[1]
    return Case(
        label=f"below={below} limit={limit}",
        arguments=lambda: {
            "event_id": event.id,
            "xid": middle.change_xid,
            "seq": middle.change_seq,
            "below": middle.change_xid + 1_000_000 if below else None,
            "limit": limit,
        },
    )


def _counts() -> Case:
    event = EventFactory()
    vip, entrance = TicketTypeFactory(event=event), CheckInTypeFactory(event=event)
    tickets = [TicketFactory(event=event, ticket_type=vip) for _ in range(3)] + [
        TicketFactory(event=event)
    ]
    Ticket.objects.filter(pk=tickets[0].pk).update(status=Ticket.Status.USED, used_at=AT)
    Ticket.objects.filter(pk=tickets[1].pk).update(status=Ticket.Status.REVOKED)
    TicketCheckIn.objects.create(ticket=tickets[0], check_in_type=entrance, used_at=AT)
    for minutes, error in ((0, None), (5, None), (40, None), (50, "ticket_already_used")):
        CheckInLog.objects.create(
            ticket=tickets[0],
            event=event,
            action=CheckInLog.Action.CHECK_IN,
            at=AT + timedelta(minutes=minutes),
            error=error,
        )
    return Case(
        label="tickets, a check-in type, four audit rows",
        arguments=lambda: {"event_id": event.id},
        result=lambda counts: (counts.tickets, counts.check_in_types, counts.buckets),
    )


CASES = {
    "checkin.statements.scan_claim": lambda: [
        _claim(taken=taken, owned=owned) for taken in (False, True) for owned in (True, False)
    ],
    "checkin.services.statements.admit": _admissions,
    "checkin.services.statements.admit_scan": _scans,
    "checkin.statements.tickets_save": lambda: [_tickets_save()],
    "checkin.statements.tickets_changed": lambda: [
        _feed(below=below, limit=limit) for below in (False, True) for limit in (1, 10)
    ],
    "checkin.statements.check_in_counts": lambda: [_counts()],
}
