"""The gate's writes: create, check in, renew and revoke tickets (CONTRACT §5, §7).

Every rule that two requests could race on is enforced by the database, not by a prior read:
the ticket row is locked with `select_for_update` before its state is read (or, for the gate's
common case, admitted by one conditional UPDATE whose WHERE clause is the rules), capacity is
claimed with one conditional UPDATE of the ticket type's counters, and the unique constraints on
`external_id`, `reference_code`, `nfc_uid` and (ticket, check-in type) are the last word.
"""

from __future__ import annotations

import functools
import logging
import secrets
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, ParamSpec, TypeVar

import phonenumbers
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, OperationalError, transaction
from django.db.models import Exists, F, OuterRef, Prefetch, Q, Subquery, prefetch_related_objects
from django.utils import timezone

from events.models import CheckInType, Event, TicketType
from events.selectors import event_get_for_organizer
from orders.models import Order
from ticketing.api.exceptions import InvalidParameters, NotFound

from .exceptions import (
    CheckInTypeRequired,
    DuplicateExternalId,
    DuplicateNfcUid,
    DuplicateReferenceCode,
    EventNotActive,
    EventNotActiveForTicket,
    OrderNotPaid,
    QuotaExceeded,
    TicketAlreadyUsed,
    TicketNotUsed,
    TicketRevoked,
)
from .models import CheckInLog, Ticket, TicketCheckIn, TicketFormAnswer

if TYPE_CHECKING:
    from accounts.models import User
    from oauth_setup.models import Application

logger = logging.getLogger(__name__)

PHONE_DEFAULT_REGION = "TH"
REFERENCE_CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0 O 1 I: read aloud at gates
REFERENCE_CODE_LENGTH = 8
_REFERENCE_CODE_DRAWS = 5
_REFERENCE_CODE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")

# Serialization failure, deadlock, lock not available: worth one more try (CONTRACT §2, 503).
_TRANSIENT_SQLSTATES = frozenset({"40001", "40P01", "55P03"})

_UNIQUE_CONSTRAINTS = {
    "external_id": "ticket_unique_external_id",
    "reference_code": "ticket_unique_reference_code",
    "nfc_uid": "ticket_unique_nfc_uid",
}


# --- Results --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Actor:
    """Who did it; audit rows record both (a user token has both, an application token no user)."""

    user: User | None = None
    application: Application | None = None


@dataclass(frozen=True)
class TypeResult:
    """The outcome for one requested check-in type, in request order."""

    check_in_type_id: int
    check_in_type_name: str | None
    used_at: datetime | None
    success: bool
    error: str | None


@dataclass(frozen=True)
class GateResult:
    ticket: Ticket
    check_in_results: list[TypeResult]
    renew_results: list[TypeResult]

    @property
    def success(self) -> bool:
        """True when every requested type succeeded (always, in simple mode)."""
        return all(r.success for r in (*self.check_in_results, *self.renew_results))


@dataclass(frozen=True)
class TicketCreateResult:
    ticket: Ticket
    idempotent: bool


# --- Input normalisation (also used by the views' input serializers) ------------------------


def phone_to_e164(value: str) -> str:
    """`0812345678` → `+66812345678`. Raises ValueError for anything that is not a valid number."""
    try:
        parsed = phonenumbers.parse(value.strip(), PHONE_DEFAULT_REGION)
    except phonenumbers.NumberParseException:
        raise ValueError("Enter a valid phone number.") from None
    if not phonenumbers.is_valid_number(parsed):
        raise ValueError("Enter a valid phone number.")
    return phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.E164)


def reference_code_normalize(value: str) -> str:
    """Trimmed and upper-cased; 6–32 of A-Z 0-9 and `-`. Raises ValueError otherwise."""
    code = value.strip().upper()
    if not 6 <= len(code) <= 32 or not set(code) <= _REFERENCE_CODE_CHARS:
        raise ValueError("Use 6 to 32 characters: letters A-Z, digits and '-'.")
    return code


def reference_code_generate() -> str:
    return "".join(secrets.choice(REFERENCE_CODE_ALPHABET) for _ in range(REFERENCE_CODE_LENGTH))


# --- Transactions ---------------------------------------------------------------------------

P = ParamSpec("P")
R = TypeVar("R")


def _is_transient(exc: OperationalError) -> bool:
    return getattr(exc.__cause__, "sqlstate", None) in _TRANSIENT_SQLSTATES


def atomic_retrying_once(func: Callable[P, R]) -> Callable[P, R]:
    """`transaction.atomic`, run once more after a serialization failure or deadlock.

    Only an outermost transaction can be retried: inside a caller's transaction the whole
    transaction is lost, so the error goes up (and becomes a 503 at the API).
    """

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        may_retry = not transaction.get_connection().in_atomic_block
        while True:
            try:
                with transaction.atomic():
                    return func(*args, **kwargs)
            except OperationalError as exc:
                if not (may_retry and _is_transient(exc)):
                    raise
                logger.info("retrying %s after %s", func.__name__, exc.__cause__.__class__.__name__)
                may_retry = False

    return wrapper


def _violates(exc: IntegrityError, field: str) -> bool:
    """Whether `exc` broke the unique constraint on `field` (PostgreSQL: name; SQLite: columns)."""
    diag = getattr(exc.__cause__, "diag", None)
    constraint = getattr(diag, "constraint_name", None)
    if constraint is not None:
        return constraint == _UNIQUE_CONSTRAINTS[field]
    return f"{Ticket._meta.db_table}.{field}" in str(exc)


def _iso(value: datetime) -> str:
    return timezone.localtime(value).isoformat(timespec="seconds")


# --- Reading tickets for output --------------------------------------------------------------


def with_form_answers(ticket: Ticket, *, has_answers: bool = True) -> Ticket:
    """Load what `TicketSerializer` reads from the form answers.

    Most tickets have none; when a lookup already told us so, the cache `prefetch_related`
    would leave is set directly: no query, and none of the prefetch machinery's cost, which on
    the check-in path is as large as the query it saves.
    """
    if has_answers:
        answers = TicketFormAnswer.objects.select_related("field")
        prefetch_related_objects([ticket], Prefetch("form_answers", queryset=answers))
    else:
        # What prefetch_related itself leaves for a ticket without answers: an evaluated
        # queryset. A bare `.none()` would still be compiled each time it is read.
        answers = TicketFormAnswer.objects.none()
        answers._result_cache, answers._prefetch_done = [], True
        ticket.__dict__.setdefault("_prefetched_objects_cache", {})["form_answers"] = answers
    return ticket


def _ticket_for_output(**filters) -> Ticket | None:
    """The ticket matching unique `filters`, or None.

    No `first()`: its ORDER BY id is meaningless on a unique key, and on a growing table with
    stale statistics it can lead the planner away from the unique index.
    """
    ticket = next(iter(Ticket.objects.select_related("ticket_type").filter(**filters)[:1]), None)
    return with_form_answers(ticket) if ticket is not None else None


def _ticket_lock(*, event: Event, **filters) -> Ticket:
    """The event's ticket, locked until commit, with what the gate rules and the output read.

    Raises: NotFound.
    Locks: the ticket row (not its order or type: `of=self`).
    """
    ticket = (
        Ticket.objects.select_for_update(of=("self",))
        .select_related("order", "ticket_type")
        .annotate(
            event_has_check_in_types=Exists(
                CheckInType.objects.filter(event_id=OuterRef("event_id"))
            ),
            has_form_answers=Exists(TicketFormAnswer.objects.filter(ticket_id=OuterRef("pk"))),
        )
        .filter(event_id=event.pk, **filters)
        .first()
    )
    if ticket is None:
        raise NotFound("Ticket not found.")
    return with_form_answers(ticket, has_answers=ticket.has_form_answers)


# --- Create ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Holder:
    firstname: str
    lastname: str
    email: str
    phone: str


def _holder(*, firstname: str, lastname: str, email: str, phone: str) -> _Holder:
    """Trimmed, validated holder details. Raises: InvalidParameters."""
    fields: dict[str, list[str]] = {}
    firstname, lastname, email = firstname.strip(), lastname.strip(), email.strip()
    for name, value in (("firstname", firstname), ("lastname", lastname)):
        if not value:
            fields[name] = ["This field may not be blank."]
    try:
        validate_email(email)
    except DjangoValidationError:
        fields["email"] = ["Enter a valid email address."]
    try:
        phone = phone_to_e164(phone)
    except ValueError as exc:
        fields["phone"] = [str(exc)]
    if fields:
        raise InvalidParameters(next(iter(fields.values()))[0], fields=fields)
    return _Holder(firstname=firstname, lastname=lastname, email=email, phone=phone)


def _is_same_creation(
    ticket: Ticket, *, ticket_type_id: int, holder: _Holder, reference_code: str | None
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
    ticket: Ticket, *, ticket_type_id: int, holder: _Holder, reference_code: str | None
) -> TicketCreateResult:
    if not _is_same_creation(
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
    Unless suppressed, the holder's email is queued for after commit.

    Raises: InvalidParameters, NotFound (ticket type), DuplicateExternalId,
    DuplicateReferenceCode, EventNotActive, QuotaExceeded.
    Locks: the ticket type row, from the counter UPDATE until commit.
    """
    holder = _holder(firstname=firstname, lastname=lastname, email=email, phone=phone)
    external_id = (external_id or "").strip() or None
    if reference_code is not None:
        try:
            reference_code = reference_code_normalize(reference_code)
        except ValueError as exc:
            raise InvalidParameters(str(exc), fields={"reference_code": [str(exc)]}) from None
    ticket_type = TicketType.objects.filter(event_id=event.pk, pk=ticket_type_id).first()
    if ticket_type is None:
        raise NotFound("Ticket type not found.")
    replay = functools.partial(
        _replay, ticket_type_id=ticket_type.pk, holder=holder, reference_code=reference_code
    )

    if external_id is not None:
        existing = _ticket_for_output(event_id=event.pk, external_id=external_id)
        if existing is not None:
            return replay(existing)
    if event.effective_status != Event.Status.ACTIVE:
        raise EventNotActive(f"Event '{event.title}' is {event.effective_status}.")

    for _ in range(_REFERENCE_CODE_DRAWS):
        try:
            ticket = _ticket_insert(
                event=event,
                ticket_type=ticket_type,
                holder=holder,
                external_id=external_id,
                reference_code=reference_code or reference_code_generate(),
                via_api=via_api,
            )
        except IntegrityError as exc:
            if external_id is not None and _violates(exc, "external_id"):
                # Lost the race to an identical (or conflicting) request that has committed.
                existing = _ticket_for_output(event_id=event.pk, external_id=external_id)
                if existing is None:  # the winner rolled back after all: try again
                    continue
                return replay(existing)
            if _violates(exc, "reference_code"):
                if reference_code is not None:
                    raise DuplicateReferenceCode(
                        f"Reference code {reference_code} is taken in this event."
                    ) from None
                continue  # a generated code collided: draw another
            raise
        if not suppress_notifications:
            ticket_send_email(ticket_id=ticket.pk)
        logger.info(
            "ticket %s created by user=%s application=%s",
            ticket.pk,
            getattr(actor.user, "pk", None),
            getattr(actor.application, "pk", None),
        )
        return TicketCreateResult(ticket=ticket, idempotent=False)
    raise DuplicateReferenceCode("Could not draw a free reference code; try again.")


@atomic_retrying_once
def _ticket_insert(
    *,
    event: Event,
    ticket_type: TicketType,
    holder: _Holder,
    external_id: str | None,
    reference_code: str,
    via_api: bool,
) -> Ticket:
    """Claim a place with one conditional UPDATE, then insert the order and the ticket.

    Raises: QuotaExceeded, IntegrityError (external_id or reference_code taken).
    Locks: the ticket type row (the counter UPDATE) until commit.
    """
    now = timezone.now()
    room = Q(sold_count__lt=F("quantity"))
    counters = {"sold_count": F("sold_count") + 1}
    if via_api:
        room &= Q(api_quota__isnull=True) | Q(api_sold_count__lt=F("api_quota"))
        counters["api_sold_count"] = F("api_sold_count") + 1
    if not TicketType.objects.filter(room, pk=ticket_type.pk).update(**counters):
        raise QuotaExceeded(f"Ticket type '{ticket_type.name}' has no places left.")

    parsed_phone = phonenumbers.parse(holder.phone)
    order = Order.objects.create(
        event_id=event.pk,
        status=Order.Status.PAID,
        kind=Order.Kind.EXTERNAL,
        buyer_firstname=holder.firstname,
        buyer_lastname=holder.lastname,
        buyer_email=holder.email,
        buyer_phone=holder.phone,
        buyer_phone_country=phonenumbers.region_code_for_number(parsed_phone) or "",
        paid_at=now,
    )
    ticket = Ticket.objects.create(
        event_id=event.pk,
        order=order,
        ticket_type=ticket_type,
        status=Ticket.Status.ACTIVE,
        kind=Ticket.Kind.EXTERNAL,
        firstname=holder.firstname,
        lastname=holder.lastname,
        email=holder.email,
        phone=holder.phone,
        reference_code=reference_code,
        external_id=external_id,
        issued_via_api=via_api,
        registered_at=now,
    )
    return with_form_answers(ticket, has_answers=False)


def ticket_send_email(*, ticket_id: int) -> None:
    """Queue the holder's ticket email for after the current transaction commits.

    Receives an id, not an instance: the sender reads the committed row. A failure to send is
    logged and does not undo the ticket.
    """
    from .notifications import ticket_email_send

    def send() -> None:
        ticket_email_send(ticket_id=ticket_id)

    transaction.on_commit(send, robust=True)


def ticket_email_resend(*, ticket: Ticket) -> None:
    """Send the holder their ticket again, after commit.

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


# --- Check in and renew ---------------------------------------------------------------------


def _reject_unless_admissible(ticket: Ticket, event: Event) -> None:
    """Ticket-level rejections shared by check-in and renew: nothing changes, the body shows it.

    Raises: TicketRevoked, OrderNotPaid, EventNotActiveForTicket.
    """
    if ticket.status == Ticket.Status.REVOKED:
        raise TicketRevoked(f"Ticket {ticket.reference_code} has been revoked.", ticket=ticket)
    if ticket.order.status != Order.Status.PAID:
        raise OrderNotPaid(
            f"The order of ticket {ticket.reference_code} is {ticket.order.status}.", ticket=ticket
        )
    if event.status == Event.Status.DRAFT:
        raise EventNotActiveForTicket(f"Event '{event.title}' is a draft.", ticket=ticket)


def _bind_nfc_uid(ticket: Ticket, nfc_uid: str | None, changed: list[str]) -> None:
    """Bind the tag the gate read to this ticket (the latest binding wins).

    Whether another ticket of the event holds the tag is the unique constraint's call, not a
    prior read (which could not see a binding being committed meanwhile): its IntegrityError
    becomes DuplicateNfcUid in `_gate`.
    """
    if nfc_uid is not None and nfc_uid != ticket.nfc_uid:
        ticket.nfc_uid = nfc_uid
        changed.append("nfc_uid")


def _log(ticket: Ticket, *, action: str, at: datetime, actor: Actor, nfc_uid, note, type_id=None):
    return CheckInLog(
        ticket=ticket,
        check_in_type_id=type_id,
        action=action,
        at=at,
        actor_user=actor.user,
        actor_application=actor.application,
        nfc_uid=nfc_uid,
        note=note,
    )


def _types_with_state(ticket: Ticket) -> dict[int, CheckInType]:
    """The event's check-in types, each annotated with whether this ticket may use it and when
    it was admitted there (`admitted_at`, None if not). One query; events have a handful."""
    through = CheckInType.ticket_types.through
    return {
        t.pk: t
        for t in CheckInType.objects.filter(event_id=ticket.event_id).annotate(
            restricted=Exists(through.objects.filter(checkintype_id=OuterRef("pk"))),
            valid_for_ticket=Exists(
                through.objects.filter(
                    checkintype_id=OuterRef("pk"), tickettype_id=ticket.ticket_type_id
                )
            ),
            admitted_at=Subquery(
                TicketCheckIn.objects.filter(
                    ticket_id=ticket.pk, check_in_type_id=OuterRef("pk")
                ).values("used_at")[:1]
            ),
        )
    }


def _save(ticket: Ticket, changed: list[str]) -> None:
    if changed:
        ticket.save(update_fields=[*changed, "updated_at"])


def _gate(
    func: Callable[..., GateResult],
) -> Callable[..., GateResult]:
    """Run a gate operation in its transaction; a tag another ticket holds becomes a clean 409.

    The 409 body shows the ticket as it stands: the failed transaction changed nothing.
    """

    atomic_func = atomic_retrying_once(func)

    @functools.wraps(func)
    def wrapper(*, event: Event, ticket_id: int, nfc_uid: str | None = None, **kwargs):
        try:
            return atomic_func(event=event, ticket_id=ticket_id, nfc_uid=nfc_uid, **kwargs)
        except IntegrityError as exc:
            if nfc_uid is None or not _violates(exc, "nfc_uid"):
                raise
            ticket = _ticket_for_output(event_id=event.pk, pk=ticket_id)
            raise DuplicateNfcUid(
                f"NFC tag {nfc_uid} is bound to another ticket of this event.", ticket=ticket
            ) from None

    return wrapper


@_gate
def ticket_check_in(
    *,
    event: Event,
    ticket_id: int,
    actor: Actor,
    check_in_type_ids: list[int] | None = None,
    used_at: datetime | None = None,
    nfc_uid: str | None = None,
    note: str = "",
) -> GateResult:
    """Admit a ticket (simple mode) or record the requested check-in types (multiple mode).

    Simple mode when the event has no check-in types (`check_in_type_ids` is then ignored).
    In multiple mode each type is admitted at most once; the ticket is `used` from its first
    admitted type and `used_at` is the earliest admitted time. Writes one audit row per
    admission. `nfc_uid` binds the tag to the ticket.

    Raises: NotFound, TicketRevoked, OrderNotPaid, EventNotActiveForTicket, TicketAlreadyUsed
    (simple mode), CheckInTypeRequired (multiple mode without types), DuplicateNfcUid.
    Locks: the ticket row until commit, so two gates cannot both admit it.
    """
    ticket = _ticket_lock(event=event, pk=ticket_id)
    _reject_unless_admissible(ticket, event)
    at = used_at or timezone.now()
    log = functools.partial(
        _log, ticket, action=CheckInLog.Action.CHECK_IN, actor=actor, nfc_uid=nfc_uid, note=note
    )
    changed: list[str] = []

    if not ticket.event_has_check_in_types:
        if ticket.status == Ticket.Status.USED:
            raise TicketAlreadyUsed(
                f"Ticket {ticket.reference_code} was checked in at {_iso(ticket.used_at)}.",
                ticket=ticket,
            )
        _bind_nfc_uid(ticket, nfc_uid, changed)
        ticket.status, ticket.used_at = Ticket.Status.USED, at
        _save(ticket, [*changed, "status", "used_at"])
        log(at=at).save()
        return GateResult(ticket=ticket, check_in_results=[], renew_results=[])

    if not check_in_type_ids:
        raise CheckInTypeRequired(ticket=ticket)
    _bind_nfc_uid(ticket, nfc_uid, changed)
    types = _types_with_state(ticket)
    results: list[TypeResult] = []
    admitted: list[CheckInType] = []
    for type_id in check_in_type_ids:
        check_in_type = types.get(type_id)
        if check_in_type is None:
            results.append(TypeResult(type_id, None, None, False, "Unknown check-in type"))
        elif check_in_type.admitted_at is not None:
            when = check_in_type.admitted_at
            results.append(
                TypeResult(
                    type_id, check_in_type.name, when, False, f"Already checked in at {_iso(when)}"
                )
            )
        elif check_in_type.restricted and not check_in_type.valid_for_ticket:
            results.append(
                TypeResult(
                    type_id, check_in_type.name, None, False, "Not valid for this ticket type"
                )
            )
        else:
            check_in_type.admitted_at = at  # a repeat later in the same request is a duplicate
            admitted.append(check_in_type)
            results.append(TypeResult(type_id, check_in_type.name, at, True, None))

    if admitted:
        TicketCheckIn.objects.bulk_create(
            TicketCheckIn(ticket=ticket, check_in_type=t, used_at=at) for t in admitted
        )
        CheckInLog.objects.bulk_create(log(at=at, type_id=t.pk) for t in admitted)
        earliest = min(at, ticket.used_at) if ticket.used_at else at
        if ticket.status != Ticket.Status.USED or earliest != ticket.used_at:
            ticket.status, ticket.used_at = Ticket.Status.USED, earliest
            changed += ["status", "used_at"]
    _save(ticket, changed)
    return GateResult(ticket=ticket, check_in_results=results, renew_results=[])


def ticket_check_in_at_gate(
    *, organizer_id: int, event_id: int, ticket_id: int, actor: Actor, **options
) -> GateResult:
    """`ticket_check_in` for an event named by id: the API's check-in.

    Most scans are of an active ticket of a paid order at an event without check-in types. On
    PostgreSQL that case is one statement (`_admit`) instead of the locked read-decide-write
    of `ticket_check_in`. Anything else (a rejection, multiple mode, a tag to bind) goes to
    `ticket_check_in`, which decides and explains.

    Raises: NotFound (event or ticket), and what `ticket_check_in` raises.
    """
    if options.get("nfc_uid") is None and transaction.get_connection().vendor == "postgresql":
        ticket = _admit(
            organizer_id=organizer_id,
            event_id=event_id,
            ticket_id=ticket_id,
            actor=actor,
            at=options.get("used_at") or timezone.now(),
            note=options.get("note", ""),
        )
        if ticket is not None:
            return GateResult(ticket=ticket, check_in_results=[], renew_results=[])
    event = event_get_for_organizer(organizer_id=organizer_id, event_id=event_id)
    return ticket_check_in(event=event, ticket_id=ticket_id, actor=actor, **options)


def _admit(
    *, organizer_id: int, event_id: int, ticket_id: int, actor: Actor, at: datetime, note: str
) -> Ticket | None:
    """Simple-mode check-in as one conditional UPDATE with its audit row; None if it does not
    apply (the ticket is not active, its order not paid, the event a draft or in multiple
    mode, or nothing matches).

    The WHERE clause is every rule of a simple-mode admission, so the database decides: of
    two gates scanning at once, the second waits for the first's row lock, finds the ticket
    used, updates nothing and falls through to the full service, which says so. The statement
    commits on its own; should the form answers then fail to load, the gate's retry gets
    `ticket_already_used` with the ticket, as after any answer lost on the way.
    """
    connection = transaction.get_connection()
    with connection.cursor() as cursor:
        cursor.execute(
            _admit_sql(),
            {
                "ticket_id": ticket_id,
                "event_id": event_id,
                "organizer_id": organizer_id,
                "at": at,
                "now": timezone.now(),
                "user_id": actor.user.pk if actor.user else None,
                "application_id": actor.application.pk if actor.application else None,
                "note": note,
            },
        )
        row = cursor.fetchone()
    if row is None:
        return None
    ticket_columns, type_columns = _admit_columns()
    ticket = Ticket.from_db(connection.alias, ticket_columns, row[: len(ticket_columns)])
    ticket.ticket_type = TicketType.from_db(
        connection.alias,
        type_columns,
        row[len(ticket_columns) : len(ticket_columns) + len(type_columns)],
    )
    return with_form_answers(ticket, has_answers=row[-1])


@functools.cache
def _admit_columns() -> tuple[list[str], list[str]]:
    return (
        [f.attname for f in Ticket._meta.concrete_fields],
        [f.attname for f in TicketType._meta.concrete_fields],
    )


@functools.cache
def _admit_sql() -> str:
    ticket_columns, type_columns = _admit_columns()
    returning = ", ".join(f"t.{c}" for c in ticket_columns)
    ticket_type = ", ".join(f"tt.{c}" for c in type_columns)
    admitted = ", ".join(f"admitted.{c}" for c in ticket_columns)
    return f"""
        WITH admitted AS (
            UPDATE {Ticket._meta.db_table} AS t
            SET status = '{Ticket.Status.USED}', used_at = %(at)s, updated_at = %(now)s
            FROM {Event._meta.db_table} AS e, {Order._meta.db_table} AS o
            WHERE t.id = %(ticket_id)s AND t.event_id = %(event_id)s
              AND t.status = '{Ticket.Status.ACTIVE}'
              AND e.id = t.event_id AND e.organizer_id = %(organizer_id)s
              AND e.status <> '{Event.Status.DRAFT}'
              AND o.id = t.order_id AND o.status = '{Order.Status.PAID}'
              AND NOT EXISTS (
                  SELECT 1 FROM {CheckInType._meta.db_table} AS c WHERE c.event_id = t.event_id
              )
            RETURNING {returning}
        ), audit AS (
            INSERT INTO {CheckInLog._meta.db_table} (
                ticket_id, check_in_type_id, action, at, actor_user_id, actor_application_id,
                nfc_uid, note, created_at
            )
            SELECT id, NULL, '{CheckInLog.Action.CHECK_IN}', %(at)s, %(user_id)s,
                %(application_id)s, NULL, %(note)s, %(now)s
            FROM admitted
        )
        SELECT {admitted}, {ticket_type}, EXISTS (
            SELECT 1 FROM {TicketFormAnswer._meta.db_table} AS a WHERE a.ticket_id = admitted.id
        )
        FROM admitted JOIN {TicketType._meta.db_table} AS tt ON tt.id = admitted.ticket_type_id
    """


@_gate
def ticket_renew(
    *,
    event: Event,
    ticket_id: int,
    actor: Actor,
    check_in_type_ids: list[int] | None = None,
    used_at: datetime | None = None,
    nfc_uid: str | None = None,
    note: str = "",
) -> GateResult:
    """Undo a check-in: the whole ticket (simple mode) or the requested types (default: all).

    In multiple mode the ticket returns to `active` once no type remains checked in; otherwise
    its `used_at` becomes the earliest remaining admission. `used_at` is the time recorded in the
    audit row (default now); `nfc_uid` is recorded there too, not bound.

    Raises: NotFound, TicketRevoked, OrderNotPaid, EventNotActiveForTicket, TicketNotUsed.
    Locks: the ticket row until commit.
    """
    ticket = _ticket_lock(event=event, pk=ticket_id)
    _reject_unless_admissible(ticket, event)
    if ticket.status != Ticket.Status.USED:
        raise TicketNotUsed(f"Ticket {ticket.reference_code} is not checked in.", ticket=ticket)
    at = used_at or timezone.now()
    log = functools.partial(
        _log, ticket, action=CheckInLog.Action.RENEW, at=at, actor=actor, nfc_uid=nfc_uid, note=note
    )

    if not ticket.event_has_check_in_types:
        ticket.status, ticket.used_at = Ticket.Status.ACTIVE, None
        _save(ticket, ["status", "used_at"])
        log().save()
        return GateResult(ticket=ticket, check_in_results=[], renew_results=[])

    types = _types_with_state(ticket)
    if check_in_type_ids is None or not check_in_type_ids:
        requested = [t.pk for t in types.values() if t.admitted_at is not None]
    else:
        requested = check_in_type_ids
    results: list[TypeResult] = []
    renewed: list[int] = []
    for type_id in requested:
        check_in_type = types.get(type_id)
        if check_in_type is None:
            results.append(TypeResult(type_id, None, None, False, "Unknown check-in type"))
        elif check_in_type.admitted_at is None:
            results.append(TypeResult(type_id, check_in_type.name, None, False, "Not checked in"))
        else:
            check_in_type.admitted_at = None
            renewed.append(type_id)
            results.append(TypeResult(type_id, check_in_type.name, at, True, None))

    if renewed:
        TicketCheckIn.objects.filter(ticket=ticket, check_in_type_id__in=renewed).delete()
        CheckInLog.objects.bulk_create(log(type_id=type_id) for type_id in renewed)
    remaining = [t.admitted_at for t in types.values() if t.admitted_at is not None]
    if not remaining:
        if not renewed:  # used before the event had types: nothing per type to undo
            log().save()
        ticket.status, ticket.used_at = Ticket.Status.ACTIVE, None
        _save(ticket, ["status", "used_at"])
    elif min(remaining) != ticket.used_at:
        ticket.used_at = min(remaining)
        _save(ticket, ["used_at"])
    return GateResult(ticket=ticket, check_in_results=[], renew_results=results)


# --- Revoke ---------------------------------------------------------------------------------


def tickets_revoke_locked(*, tickets: Iterable[Ticket], note: str | None) -> None:
    """Revoke tickets the caller has locked and checked, and free their places.

    Counters go down with F() in ticket type id order, so two cancellations cannot deadlock.
    Locks: the ticket type rows until commit.
    """
    freed: Counter[int] = Counter()
    freed_api: Counter[int] = Counter()
    for ticket in tickets:
        ticket.status = Ticket.Status.REVOKED
        ticket.revoke_note = note or ticket.revoke_note
        ticket.save(update_fields=["status", "revoke_note", "updated_at"])
        freed[ticket.ticket_type_id] += 1
        if ticket.issued_via_api:
            freed_api[ticket.ticket_type_id] += 1
    for ticket_type_id in sorted(freed):
        counters = {"sold_count": F("sold_count") - freed[ticket_type_id]}
        if freed_api[ticket_type_id]:
            counters["api_sold_count"] = F("api_sold_count") - freed_api[ticket_type_id]
        TicketType.objects.filter(pk=ticket_type_id).update(**counters)


@atomic_retrying_once
def ticket_revoke(
    *,
    event: Event,
    ticket_id: int | None = None,
    reference_code: str | None = None,
    reason: str = "",
    actor: Actor,
) -> Ticket:
    """Revoke (invalidate) a ticket of the event, found by id or reference code, freeing its place.

    `reason` becomes `revoke_note` (null when empty). Revoked is final; a used ticket must be
    renewed first.

    Raises: InvalidParameters (neither id nor code), NotFound, TicketRevoked, TicketAlreadyUsed.
    Locks: the ticket row, then its ticket type row, until commit.
    """
    filters: dict[str, object] = {}
    if ticket_id is not None:
        filters["pk"] = ticket_id
    if reference_code is not None:
        filters["reference_code"] = reference_code.strip().upper()
    if not filters:
        raise InvalidParameters(
            "Send ticket_id or reference_code.",
            fields={"ticket_id": ["Send ticket_id or reference_code."]},
        )
    ticket = _ticket_lock(event=event, **filters)
    if ticket.status == Ticket.Status.REVOKED:
        raise TicketRevoked(f"Ticket {ticket.reference_code} is already revoked.", ticket=ticket)
    if ticket.status == Ticket.Status.USED:
        raise TicketAlreadyUsed(
            f"Ticket {ticket.reference_code} was checked in at {_iso(ticket.used_at)}; "
            "renew it before revoking.",
            ticket=ticket,
        )
    tickets_revoke_locked(tickets=[ticket], note=reason.strip() or None)
    logger.info(
        "ticket %s revoked by user=%s application=%s",
        ticket.pk,
        getattr(actor.user, "pk", None),
        getattr(actor.application, "pk", None),
    )
    return ticket
