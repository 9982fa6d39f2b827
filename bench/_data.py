"""Bench data, written through the ORM: one organizer, its gate tokens, one event of N tickets.

Called after `setup_django()`. Tickets are bulk-inserted with the ticket type's capacity
counter set to match, as the services would have left it, and the tables analyzed.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta


@dataclass
class BenchData:
    organizer_id: int
    event_id: int
    ticket_ids: list[int]
    gate_tokens: list[str]  # one per client thread: half application, half member tokens
    me_token: str  # a user token of one person, shared by every client (for /me)
    me_user_id: int

    def checkin_path(self, ticket_id: int) -> str:
        return (
            f"/api/public/organizers/{self.organizer_id}/events/{self.event_id}"
            f"/tickets/{ticket_id}/checkin"
        )

    @property
    def event_path(self) -> str:
        return f"/api/public/organizers/{self.organizer_id}/events/{self.event_id}"


def mint(*, application, user=None, scope: str) -> str:
    from django.utils import timezone
    from oauth2_provider.models import AccessToken

    raw = secrets.token_urlsafe(30)
    AccessToken.objects.create(
        token=raw,
        application=application,
        user=user,
        scope=scope,
        expires=timezone.now() + timedelta(hours=2),
    )
    return raw


def seed(*, tickets: int, gates: int, label: str) -> BenchData:
    from django.db import transaction
    from django.utils import timezone

    from accounts.models import User
    from events.models import Event, TicketType
    from oauth_setup.models import Application
    from organizers.models import Membership, Organizer
    from tickets.models import Order, Ticket

    run = secrets.token_hex(4)
    now = timezone.now()
    with transaction.atomic():
        organizer = Organizer.objects.create(name=f"Bench {label}", slug=f"bench-{label}-{run}")
        application = Application.objects.create(
            name=f"Bench gates {run}",
            organizer=organizer,
            client_type=Application.CLIENT_CONFIDENTIAL,
            authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
            allow_client_credentials=True,
            redirect_uris="http://127.0.0.1:8765/callback",
        )
        event = Event.objects.create(
            organizer=organizer,
            title=f"Bench night {run}",
            status=Event.Status.ACTIVE,
            location_name="Bench Arena",
            start_at=now + timedelta(hours=1),
            end_at=now + timedelta(hours=6),
        )
        ticket_type = TicketType.objects.create(
            event=event, name="Standing", price=150000, quantity=tickets, sold_count=tickets
        )
        orders = Order.objects.bulk_create(
            Order(
                event=event,
                status=Order.Status.PAID,
                paid_at=now,
                buyer_firstname="Bench",
                buyer_lastname=f"Buyer {n}",
                buyer_email=f"buyer{n}@bench.example",
            )
            for n in range((tickets + 9) // 10)
        )
        created = Ticket.objects.bulk_create(
            Ticket(
                event=event,
                order=orders[n // 10],
                ticket_type=ticket_type,
                firstname="Holder",
                lastname=str(n),
                email=f"holder{n}@bench.example",
                phone="+66812345678",
                reference_code=f"B{run.upper()}{n:06d}",
            )
            for n in range(tickets)
        )
        tokens = []
        for gate in range(gates):
            if gate % 2 == 0:
                tokens.append(mint(application=application, scope="public"))
            else:
                staff = User.objects.create(
                    username=f"gate{gate}-{run}", email=f"gate{gate}-{run}@bench.example"
                )
                Membership.objects.create(user=staff, organizer=organizer, role="staff")
                tokens.append(mint(application=application, user=staff, scope="public organizer"))
        person = User.objects.create(
            username=f"me-{run}", full_name="Bench Person", email=f"me-{run}@bench.example"
        )
        me_token = mint(application=application, user=person, scope="public")
    _analyze()
    return BenchData(
        organizer_id=organizer.id,
        event_id=event.id,
        ticket_ids=[t.id for t in created],
        gate_tokens=tokens,
        me_token=me_token,
        me_user_id=person.id,
    )


def reference_codes(data: BenchData, ids: list[int]) -> list[str]:
    """The reference codes of the event's tickets `ids`, in that order: what a scan sends."""
    from tickets.models import Ticket

    by_id = dict(Ticket.objects.filter(event_id=data.event_id).values_list("id", "reference_code"))
    return [by_id[i] for i in ids]


def signed_codes(data: BenchData, ids: list[int]) -> list[str]:
    """The signed codes (CONTRACT §14, `T1....`) of the event's tickets `ids`, in that order: what
    a scan of the QR code sends when the event signs its codes (seeded events do)."""
    from tickets.models import Ticket
    from tickets.signed_codes import signed_code

    tickets = Ticket.objects.filter(event_id=data.event_id).in_bulk(ids)
    return [signed_code(tickets[i], organizer_id=data.organizer_id) for i in ids]


def _analyze() -> None:
    """Give the planner statistics, as a live database has: right after a bulk insert it would
    otherwise guess, and pick sequential scans a deployment never sees."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        settle()


def settle() -> None:
    """Leave the tickets as a live database's background work keeps them between bursts, before
    anything is timed: vacuumed (the visibility map, which index-only scans such as the lists'
    counts read, and trigram indexes' pending lists flushed) and checkpointed. Otherwise a
    checkpoint that a bulk insert's WAL started writes for minutes during the timed runs, and
    the first workload after a burst of writes pays its vacuum."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SET statement_timeout = 0")  # the bench process's own session
        cursor.execute("VACUUM (ANALYZE) tickets_ticket")
        cursor.execute("CHECKPOINT")


def reopen(event_id: int) -> None:
    """Make the event's admitted tickets active again, with no check-ins (of any check-in type)
    and no scan ids answered, for another round."""
    from checkin.models import CheckInLog, ScanRecord, TicketCheckIn
    from tickets.models import Ticket

    ScanRecord.objects.filter(event_id=event_id).delete()
    CheckInLog.objects.filter(ticket__event_id=event_id).delete()
    TicketCheckIn.objects.filter(ticket__event_id=event_id).delete()
    Ticket.objects.filter(event_id=event_id, status=Ticket.Status.USED).update(
        status=Ticket.Status.ACTIVE, used_at=None
    )


@dataclass
class TicketState:
    status: str
    used_at: object
    check_in_logs: int


def ticket_states(ticket_ids: list[int]) -> dict[int, TicketState]:
    """Status, used_at and the number of check-in audit rows of each ticket, in two queries."""
    from django.db.models import Count, Q

    from checkin.models import CheckInLog
    from tickets.models import Ticket

    rows = Ticket.objects.filter(id__in=ticket_ids).annotate(
        logs=Count("check_in_logs", filter=Q(check_in_logs__action=CheckInLog.Action.CHECK_IN))
    )
    return {t.id: TicketState(t.status, t.used_at, t.logs) for t in rows}
