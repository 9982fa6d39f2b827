"""Issuing tickets: one ticket in a new paid external order, and the holder's email (CONTRACT §5).

Capacity is claimed with the ticket type's conditional UPDATE (`ticket_type_claim_places`), the
last statement before COMMIT: its row lock serialises every sale of the type, so it is held for
one statement and a commit, not for the inserts. The unique constraints on `external_id` and
`reference_code` are the last word on duplicates: a replay that loses the race to its twin
answers with the winner's ticket.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from django.db import IntegrityError
from django.utils import timezone

from events.models import Event, TicketType
from events.services import ticket_type_claim_places
from ticketing.api.exceptions import InvalidParameters, NotFound
from ticketing.db import atomic_retrying_once

from ..codes import reference_code_generate, reference_code_validate
from ..exceptions import (
    DuplicateExternalId,
    DuplicateReferenceCode,
    EventNotActive,
    QuotaExceeded,
    TicketRevoked,
)
from ..models import Order, Ticket
from ..names import person_name_validate
from ..phones import phone_country, phone_e164, phone_parse
from ..selectors import ticket_for_output, with_form_answers
from ..tasks import ticket_email_send
from .common import Actor, violates
from .publishing import Type, tickets_event_record

# One logger for every ticket service, as operators (and the import command) know it.
logger = logging.getLogger(__package__)

_REFERENCE_CODE_DRAWS = 5


@dataclass(frozen=True)
class TicketCreateResult:
    ticket: Ticket
    idempotent: bool


@dataclass(frozen=True)
class Holder:
    firstname: str
    lastname: str
    email: str
    phone: str  # E.164
    phone_country: str = field(default="", compare=False)  # ISO 3166 alpha-2, for the order


@dataclass(frozen=True)
class Issue:
    """One ticket to issue: checked, its reference code chosen or drawn."""

    ticket_type: TicketType
    holder: Holder
    reference_code: str
    external_id: str | None = None


def holder_clean(*, firstname: str, lastname: str, email: str, phone: str) -> Holder:
    """Trimmed, validated holder details. Raises: InvalidParameters."""
    fields: dict[str, list[str]] = {}
    firstname, lastname, email = firstname.strip(), lastname.strip(), email.strip()
    for name, value in (("firstname", firstname), ("lastname", lastname)):
        if not value:
            fields[name] = ["This field may not be blank."]
            continue
        try:
            person_name_validate(value)
        except ValueError as exc:
            fields[name] = [str(exc)]
    try:
        validate_email(email)
    except DjangoValidationError:
        fields["email"] = ["Enter a valid email address."]
    country = ""
    try:
        parsed = phone_parse(phone)
    except ValueError as exc:
        fields["phone"] = [str(exc)]
    else:
        # Parsed once: the import checks thousands of rows and this is its costliest check.
        phone, country = phone_e164(parsed), phone_country(parsed)
    if fields:
        raise InvalidParameters(next(iter(fields.values()))[0], fields=fields)
    return Holder(
        firstname=firstname, lastname=lastname, email=email, phone=phone, phone_country=country
    )


def is_same_creation(
    ticket: Ticket, *, ticket_type_id: int, holder: Holder, reference_code: str | None
) -> bool:
    """A replay sends the same ticket type and holder (and code, if it chose one)."""
    return (
        ticket.ticket_type_id == ticket_type_id
        and ticket.firstname == holder.firstname
        and ticket.lastname == holder.lastname
        and ticket.email.lower() == holder.email.lower()
        and ticket.phone == holder.phone
        and (reference_code is None or ticket.reference_code == reference_code)
    )


def _replay(
    ticket: Ticket, *, ticket_type_id: int, holder: Holder, reference_code: str | None
) -> TicketCreateResult:
    if not is_same_creation(
        ticket, ticket_type_id=ticket_type_id, holder=holder, reference_code=reference_code
    ):
        raise DuplicateExternalId(
            f"Ticket {ticket.reference_code} already has this external_id, with other details."
        )
    return TicketCreateResult(ticket=ticket, idempotent=True)


def ticket_create(
    *,
    event: Event,
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
    """Issue one ticket in a new paid external order, or replay the creation of `external_id`.

    A replay (same `external_id`, ticket type and holder) returns the existing ticket and creates
    nothing, also when it arrives while the first request is still committing: the unique
    constraint makes the late one fail, its transaction is rolled back (with its counter claim),
    and it answers with the winner's ticket. `via_api` tickets also count against `api_quota`.
    In the same transaction: the `ticket.created` webhook event and, unless suppressed, the
    holder's email task.

    Raises: InvalidParameters, NotFound (ticket type), DuplicateExternalId,
    DuplicateReferenceCode, EventNotActive, QuotaExceeded.
    Locks: the ticket type row, from the counter UPDATE (the last statement) until commit.
    """
    holder = holder_clean(firstname=firstname, lastname=lastname, email=email, phone=phone)
    external_id = (external_id or "").strip() or None
    reference_code = _chosen_code(reference_code)
    ticket_type = TicketType.objects.filter(event_id=event.pk, pk=ticket_type_id).first()
    if ticket_type is None:
        raise NotFound("Ticket type not found.")
    replay = functools.partial(
        _replay, ticket_type_id=ticket_type.pk, holder=holder, reference_code=reference_code
    )

    # A new `external_id` (the common case) needs no lookup: the unique constraint finds a
    # replay on insert. A request that will be refused looks first, as a replay still answers.
    refusal = _refusal(event=event, ticket_type=ticket_type, via_api=via_api)
    if refusal is not None:
        if external_id is not None:
            existing = ticket_for_output(event_id=event.pk, external_id=external_id)
            if existing is not None:
                return replay(existing)
        raise refusal

    return _issued_or_replayed(
        event=event,
        issue=Issue(
            ticket_type=ticket_type, holder=holder, reference_code="", external_id=external_id
        ),
        chosen_code=reference_code,
        via_api=via_api,
        notify=not suppress_notifications,
        replay=replay,
        actor=actor,
    )


def _chosen_code(reference_code: str | None) -> str | None:
    """The code as stored, if the client chose one. Raises: InvalidParameters."""
    if reference_code is None:
        return None
    try:
        return reference_code_validate(reference_code)
    except ValueError as exc:
        raise InvalidParameters(str(exc), fields={"reference_code": [str(exc)]}) from None


def _issued_or_replayed(
    *,
    event: Event,
    issue: Issue,
    chosen_code: str | None,
    via_api: bool,
    notify: bool,
    replay,
    actor: Actor,
) -> TicketCreateResult:
    """Insert the ticket (`issue` with the chosen code, or drawn ones until one is free), or
    answer with the ticket of its `external_id` when the insert finds one (`replay`).

    Raises: DuplicateReferenceCode, DuplicateExternalId (via `replay`), QuotaExceeded.
    """
    external_id = issue.external_id
    for _ in range(_REFERENCE_CODE_DRAWS):
        try:
            code = chosen_code or reference_code_generate()
            ticket = _ticket_insert(
                event=event,
                issue=dataclasses.replace(issue, reference_code=code),
                via_api=via_api,
                notify=notify,
            )
        except IntegrityError as exc:
            taken_code = violates(exc, "reference_code")
            if external_id is not None and (taken_code or violates(exc, "external_id")):
                # A replay, or lost the race to an identical (or conflicting) request; a replay
                # with its own code may trip the code's constraint first.
                existing = ticket_for_output(event_id=event.pk, external_id=external_id)
                if existing is not None:
                    return replay(existing)
                if not taken_code:  # the winner rolled back after all: try again
                    continue
            if taken_code:
                if chosen_code is not None:
                    raise DuplicateReferenceCode(
                        f"Reference code {chosen_code} is taken in this event."
                    ) from None
                continue  # a generated code collided: draw another
            raise
        logger.info(
            "ticket %s created by user=%s application=%s",
            ticket.pk,
            getattr(actor.user, "pk", None),
            getattr(actor.application, "pk", None),
        )
        return TicketCreateResult(ticket=ticket, idempotent=False)
    raise DuplicateReferenceCode("Could not draw a free reference code; try again.")


def _refusal(*, event: Event, ticket_type: TicketType, via_api: bool) -> Exception | None:
    """Why the creation is refused before anything is written: the event is not active, or the
    type (as just read) has no place left. A sold-out type then costs one read, not the inserts
    and their rollback; a place a revocation frees after that read is the next request's."""
    if event.effective_status != Event.Status.ACTIVE:
        return EventNotActive(f"Event '{event.title}' is {event.effective_status}.")
    full = ticket_type.sold_count >= ticket_type.quantity or (
        via_api
        and ticket_type.api_quota is not None
        and ticket_type.api_sold_count >= ticket_type.api_quota
    )
    if full:
        return QuotaExceeded(f"Ticket type '{ticket_type.name}' has no places left.")
    return None


@atomic_retrying_once
def _ticket_insert(*, event: Event, issue: Issue, via_api: bool, notify: bool) -> Ticket:
    """Issue the ticket (`tickets_issue`), then claim the place: last, so that the type's row
    lock, which every sale of the type waits for, is held only from the claim to the commit.
    No place, and the transaction rolls back with all it inserted.

    Raises: QuotaExceeded, IntegrityError (external_id or reference_code taken).
    Locks: the ticket type row (the counter UPDATE), from the last statement until commit.
    """
    [ticket] = tickets_issue(event=event, issues=[issue], via_api=via_api, notify=notify)
    ticket_type = issue.ticket_type
    if not ticket_type_claim_places(ticket_type_id=ticket_type.pk, via_api=via_api):
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
    orders = [
        Order(
            event_id=event.pk,
            status=Order.Status.PAID,
            kind=Order.Kind.EXTERNAL,
            buyer_firstname=issue.holder.firstname,
            buyer_lastname=issue.holder.lastname,
            buyer_email=issue.holder.email,
            buyer_phone=issue.holder.phone,
            buyer_phone_country=issue.holder.phone_country,
            paid_at=now,
        )
        for issue in issues
    ]
    tickets = [
        ticket_built(event_id=event.pk, issue=issue, order=order, via_api=via_api, now=now)
        for issue, order in zip(issues, orders, strict=True)
    ]
    if len(issues) == 1:  # the API's: `save()`, without the bulk machinery for one row
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
        for ticket in tickets:
            ticket_send_email(ticket_id=ticket.pk)


def ticket_send_email(*, ticket_id: int) -> None:
    """Enqueue the holder's ticket email, in the current transaction if there is one.

    A worker sends it (`tickets.tasks`), retrying while the mail server fails; a failure to
    send never undoes the ticket.
    """
    ticket_email_send.enqueue(ticket_id)


def ticket_email_resend(*, ticket: Ticket) -> None:
    """Send the holder their ticket again (a task; see `ticket_send_email`).

    Raises: TicketRevoked (a revoked ticket admits no one), InvalidParameters (no email).
    """
    if ticket.status == Ticket.Status.REVOKED:
        raise TicketRevoked(
            f"Ticket {ticket.reference_code} is revoked; it is not sent.", ticket=ticket
        )
    if not ticket.email:
        raise InvalidParameters(
            f"Ticket {ticket.reference_code} has no holder email address.",
            fields={"email": ["The holder has no email address."]},
        )
    ticket_send_email(ticket_id=ticket.pk)
