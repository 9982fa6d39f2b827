"""Issuing tickets: one ticket in a new paid external order, and the holder's email (CONTRACT §5).

Capacity is claimed with the ticket type's conditional UPDATE, whose row lock serialises every
sale of the type, so it is held as briefly as can be. On PostgreSQL the API's creation is one
statement that claims and writes everything (`statements.issue`): the lock lasts that statement.
Elsewhere (SQLite; the importer's batches) the claim is the last statement before COMMIT
(`ticket_type_claim_places`), after the inserts. The unique constraints on `external_id` and
`reference_code` are the last word on duplicates: a replay that loses the race to its twin
answers with the winner's ticket.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils import timezone

from events.models import Event, TicketType
from events.selectors import event_get_for_organizer
from events.services import ticket_type_claim_places, ticket_type_claim_sql
from ticketing.api.exceptions import InvalidParameters, NotFound
from ticketing.db import atomic_retrying_once

from ..codes import reference_code_generate, reference_code_validate
from ..email_outbox import ticket_emails_queue
from ..exceptions import (
    DuplicateExternalId,
    DuplicateReferenceCode,
    EventNotActive,
    QuotaExceeded,
)
from ..models import Order, Ticket
from ..selectors import ticket_for_output, with_form_answers
from ..statements.issue import Claim, ticket_issue
from .common import Actor, violates
from .holders import Holder, holder_clean, is_same_creation
from .publishing import Type, tickets_event_record

# One logger for every ticket service, as operators (and the import command) know it.
logger = logging.getLogger(__package__)

_REFERENCE_CODE_DRAWS = 5
# events' capacity rule, as the issuing statement claims a place (`statements.issue`).
_CLAIM = Claim(sql=ticket_type_claim_sql(name="claim"), places=ticket_type_claim_places)


def issuing_statement_available() -> bool:
    """Whether the API's creation can be one statement (`statements.issue`): PostgreSQL."""
    return transaction.get_connection().vendor == "postgresql"


@dataclass(frozen=True)
class TicketCreateResult:
    ticket: Ticket
    idempotent: bool


@dataclass(frozen=True)
class Issue:
    """One ticket to issue: checked, its reference code chosen or drawn."""

    ticket_type: TicketType
    holder: Holder
    reference_code: str
    external_id: str | None = None


@dataclass(frozen=True)
class _Creation:
    """One creation as the client asked for it, checked: what every step below reads."""

    organizer_id: int
    event_id: int
    ticket_type_id: int
    holder: Holder
    external_id: str | None
    reference_code: str | None  # chosen by the client; else each try draws one
    via_api: bool
    notify: bool
    actor: Actor


def ticket_create(*, event: Event, **details) -> TicketCreateResult:
    """Issue one ticket in a new paid external order, or replay the creation of `external_id`.

    A replay (same `external_id`, ticket type and holder) creates nothing and answers with the
    existing ticket, also while the first is still committing: the late one fails on the unique
    constraint, rolled back with its claim. `via_api` tickets also count against `api_quota`.
    With the ticket: its `ticket.created` event and, unless suppressed, the queued email.

    Raises: InvalidParameters, NotFound (ticket type), DuplicateExternalId,
    DuplicateReferenceCode, EventNotActive, QuotaExceeded. Locks: the type's row (see above).
    """
    return _create(organizer_id=event.organizer_id, event_id=event.pk, event=event, **details)


def ticket_create_in_event(*, organizer_id: int, event_id: int, **details) -> TicketCreateResult:
    """`ticket_create` in the organizer's event named by id, as the API's creation names it. The
    issuing statement checks that the event is the organizer's and on sale, so the event is read
    only when the statement could not issue, to tell why.

    Raises: NotFound (event), what `ticket_create` raises.
    """
    return _create(organizer_id=organizer_id, event_id=event_id, event=None, **details)


def _create(
    *,
    organizer_id: int,
    event_id: int,
    event: Event | None,
    ticket_type_id: int,
    firstname: str,
    lastname: str,
    email: str,
    phone: str,
    external_id: str | None = None,
    reference_code: str | None = None,
    suppress_notifications: bool = False,
    actor: Actor,
    via_api: bool = True,
) -> TicketCreateResult:
    """`ticket_create` in the event of `event_id`, loaded (`event`) or not read yet (None).

    On PostgreSQL, for an event not known to be off sale, one statement issues; when it writes
    nothing, the event and the type are read to tell why. Elsewhere the ORM path issues."""
    creation = _Creation(
        organizer_id=organizer_id,
        event_id=event_id,
        ticket_type_id=ticket_type_id,
        holder=holder_clean(firstname=firstname, lastname=lastname, email=email, phone=phone),
        external_id=(external_id or "").strip() or None,
        reference_code=_chosen_code(reference_code),
        via_api=via_api,
        notify=not suppress_notifications,
        actor=actor,
    )
    by_statement = issuing_statement_available() and (
        event is None or event.effective_status == Event.Status.ACTIVE
    )
    if by_statement and (issued := _issued(creation)):
        return issued
    if event is None:
        event = event_get_for_organizer(organizer_id=organizer_id, event_id=event_id)
    ticket_type = TicketType.objects.filter(event_id=event.pk, pk=ticket_type_id).first()
    if ticket_type is None:
        raise NotFound("Ticket type not found.")
    # A new `external_id` (the common case) needs no lookup: the unique constraint finds a
    # replay on insert. A request that will be refused looks first, as a replay still answers.
    refusal = _refusal(event=event, ticket_type=ticket_type, via_api=via_api, full=by_statement)
    if refusal is not None:
        existing = creation.external_id and _existing(creation)
        if existing:
            return _replay(existing, creation)
        raise refusal
    return _issued(creation, event=event, ticket_type=ticket_type)


def _chosen_code(reference_code: str | None) -> str | None:
    """The code as stored, if the client chose one. Raises: InvalidParameters."""
    if reference_code is None:
        return None
    try:
        return reference_code_validate(reference_code)
    except ValueError as exc:
        raise InvalidParameters(str(exc), fields={"reference_code": [str(exc)]}) from None


def _issued(
    creation: _Creation, *, event: Event | None = None, ticket_type: TicketType | None = None
) -> TicketCreateResult | None:
    """Issue the ticket with the chosen code, or drawn ones until one is free: by the issuing
    statement, or by the ORM in `event` once `ticket_type` is read. An `external_id` the insert
    finds taken answers as a replay. None if the statement wrote nothing.

    Raises: DuplicateReferenceCode, DuplicateExternalId, QuotaExceeded (the ORM's claim).
    """
    for _ in range(_REFERENCE_CODE_DRAWS):
        code = creation.reference_code or reference_code_generate()
        try:
            if ticket_type is None:
                ticket = _statement_write(creation, code)
            else:
                ticket = _orm_write(creation, code, event=event, ticket_type=ticket_type)
        except IntegrityError as exc:
            if replayed := _taken(creation, exc):
                return replayed
            continue
        if ticket is None:
            return None
        logger.info(
            "ticket %s created by user=%s application=%s",
            ticket.pk,
            getattr(creation.actor.user, "pk", None),
            getattr(creation.actor.application, "pk", None),
        )
        return TicketCreateResult(ticket=ticket, idempotent=False)
    raise DuplicateReferenceCode("Could not draw a free reference code; try again.")


def _taken(creation: _Creation, exc: IntegrityError) -> TicketCreateResult | None:
    """What a unique key found taken means: the replay of the ticket with this `external_id`,
    or None to try again (a drawn code collided; the winner of a race rolled back).

    Raises: DuplicateReferenceCode (the chosen code), DuplicateExternalId, `exc` (another).
    """
    taken_code = violates(exc, "reference_code")
    if creation.external_id is not None and (taken_code or violates(exc, "external_id")):
        # A replay, or lost the race to an identical (or conflicting) request; a replay with
        # its own code may trip the code's constraint first.
        existing = _existing(creation)
        if existing is not None:
            return _replay(existing, creation)
        if not taken_code:
            return None  # the winner rolled back after all
    if not taken_code:
        raise exc
    if creation.reference_code is not None:
        raise DuplicateReferenceCode(
            f"Reference code {creation.reference_code} is taken in this event."
        ) from None
    return None  # a drawn code collided: draw another


def _existing(creation: _Creation) -> Ticket | None:
    return ticket_for_output(event_id=creation.event_id, external_id=creation.external_id)


def _replay(ticket: Ticket, creation: _Creation) -> TicketCreateResult:
    """The answer to a creation sent again. Raises: DuplicateExternalId (other details)."""
    if not is_same_creation(
        ticket,
        ticket_type_id=creation.ticket_type_id,
        holder=creation.holder,
        reference_code=creation.reference_code,
    ):
        raise DuplicateExternalId(
            f"Ticket {ticket.reference_code} already has this external_id, with other details."
        )
    return TicketCreateResult(ticket=ticket, idempotent=True)


def _built(creation: _Creation, code: str, ticket_type: TicketType) -> tuple[Order, Ticket]:
    """The order and ticket `tickets_issue` would write for the creation, unsaved."""
    now = timezone.now()
    order = order_built(event_id=creation.event_id, holder=creation.holder, now=now)
    issue = Issue(
        ticket_type=ticket_type,
        holder=creation.holder,
        reference_code=code,
        external_id=creation.external_id,
    )
    ticket = ticket_built(
        event_id=creation.event_id, issue=issue, order=order, via_api=creation.via_api, now=now
    )
    return order, ticket


def _statement_write(creation: _Creation, code: str) -> Ticket | None:
    """The ticket with `code` issued by one statement (`statements.ticket_issue`), or None if
    it wrote nothing (not the organizer's event, not on sale, not its type, no place)."""
    # The type is not read: the statement's claim finds it, and returns it with the ticket.
    named = TicketType(pk=creation.ticket_type_id, event_id=creation.event_id)
    order, ticket = _built(creation, code, named)
    issued = ticket_issue(
        claim=_CLAIM,
        organizer_id=creation.organizer_id,
        order=order,
        ticket=ticket,
        notify=creation.notify,
    )
    return None if issued is None else with_form_answers(issued, has_answers=False)


def _refusal(
    *, event: Event, ticket_type: TicketType, via_api: bool, full: bool = False
) -> Exception | None:
    """Why the creation is refused before anything is written: the event is not active, or the
    type (as just read, or as the issuing statement found it: `full`) has no place left. A
    sold-out type then costs one read, not the inserts and their rollback; a place a
    revocation frees after that read is the next request's."""
    if event.effective_status != Event.Status.ACTIVE:
        return EventNotActive(f"Event '{event.title}' is {event.effective_status}.")
    full = (
        full
        or ticket_type.sold_count >= ticket_type.quantity
        or (
            via_api
            and ticket_type.api_quota is not None
            and ticket_type.api_sold_count >= ticket_type.api_quota
        )
    )
    if full:
        return QuotaExceeded(f"Ticket type '{ticket_type.name}' has no places left.")
    return None


@atomic_retrying_once
def _orm_write(creation: _Creation, code: str, *, event: Event, ticket_type: TicketType) -> Ticket:
    """Issue the ticket (`tickets_write`), then claim the place: last, so that the type's row
    lock, which every sale of the type waits for, is held only from the claim to the commit.
    No place, and the transaction rolls back with all it inserted.

    Raises: QuotaExceeded, IntegrityError (external_id or reference_code taken).
    Locks: the ticket type row (the counter UPDATE), from the last statement until commit.
    """
    order, ticket = _built(creation, code, ticket_type)
    tickets_write(event=event, orders=[order], tickets=[ticket], notify=creation.notify)
    if not ticket_type_claim_places(ticket_type_id=ticket_type.pk, via_api=creation.via_api):
        raise QuotaExceeded(f"Ticket type '{ticket_type.name}' has no places left.")
    return ticket


def ticket_built(
    *, event_id: int, issue: Issue, order: Order | None = None, via_api: bool = False, now=None
) -> Ticket:
    """The paid external ticket `issue` describes, unsaved (an import's preview keeps these)."""
    holder = issue.holder
    return Ticket(
        event_id=event_id,
        order=order,
        ticket_type=issue.ticket_type,
        status=Ticket.Status.ACTIVE,
        kind=Ticket.Kind.EXTERNAL,
        firstname=holder.firstname,
        lastname=holder.lastname,
        email=holder.email,
        phone=holder.phone,
        reference_code=issue.reference_code,
        external_id=issue.external_id,
        issued_via_api=via_api,
        registered_at=now,
    )


def order_built(*, event_id: int, holder: Holder, now) -> Order:
    """The paid external order of one ticket's holder, unsaved."""
    return Order(
        event_id=event_id,
        status=Order.Status.PAID,
        kind=Order.Kind.EXTERNAL,
        buyer_firstname=holder.firstname,
        buyer_lastname=holder.lastname,
        buyer_email=holder.email,
        buyer_phone=holder.phone,
        buyer_phone_country=holder.phone_country,
        paid_at=now,
    )


def tickets_issue(
    *, event: Event, issues: list[Issue], via_api: bool, notify: bool
) -> list[Ticket]:
    """Issue tickets, each in a new paid external order of its holder's: the one place a ticket
    is written, for the API (one) and the import (a batch: one INSERT per table). With each,
    its `ticket.created` webhook event and, when `notify`, the holder's email task. Capacity is
    the caller's: `ticket_create` claims it after this, an import's batch before.

    Call inside a transaction. Raises: IntegrityError (external_id or reference_code taken).
    """
    now = timezone.now()
    orders = [order_built(event_id=event.pk, holder=issue.holder, now=now) for issue in issues]
    tickets = [
        ticket_built(event_id=event.pk, issue=issue, order=order, via_api=via_api, now=now)
        for issue, order in zip(issues, orders, strict=True)
    ]
    return tickets_write(event=event, orders=orders, tickets=tickets, notify=notify)


def tickets_write(
    *, event: Event, orders: list[Order], tickets: list[Ticket], notify: bool
) -> list[Ticket]:
    """Save built tickets, each with its order, `ticket.created` event and queued email."""
    if len(tickets) == 1:  # the API's: `save()`, without the bulk machinery for one row
        orders[0].save(force_insert=True)
        tickets[0].save(force_insert=True)
    else:
        Order.objects.bulk_create(orders)
        Ticket.objects.bulk_create(tickets)  # each takes its order's id, assigned just now
    _tickets_announced(event=event, tickets=tickets, notify=notify)
    return tickets


def _tickets_announced(*, event: Event, tickets: list[Ticket], notify: bool) -> None:
    """Record `ticket.created` for each ticket (rendered only when some endpoint wants it) and
    queue the holders' emails."""
    for ticket in tickets:
        with_form_answers(ticket, has_answers=False)
    tickets_event_record(
        organizer_id=event.organizer_id,
        event_id=event.pk,
        tickets=tickets,
        type=Type.TICKET_CREATED,
    )
    if notify:
        ticket_emails_queue(tickets)
