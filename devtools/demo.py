"""Demo data of CONTRACT §10, created idempotently with fixed credentials.

State changes go through the same services as the API (check-in, revoke, order cancel, external
creation), so the demo shows what the service really produces.
"""

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.hashers import check_password
from django.db import transaction
from django.utils import timezone

from accounts.models import User
from checkin.services.gate import ticket_check_in
from events.models import CheckInType, Event, TicketType
from events.services import ticket_type_claim_places
from events.signing_keys import event_signing_key_ensure
from oauth_setup.models import Application
from organizers.models import Membership, Organizer
from tickets.models import Order, Ticket
from tickets.services.common import Actor
from tickets.services.issuing import ticket_create
from tickets.services.revoking import order_cancel, ticket_revoke

from .demo_people import HOLDERS, ORGANIZERS, USERS

REDIRECT_URI = "http://127.0.0.1:8765/callback"


def docs_redirect_uri() -> str:
    """Where the API docs' Authorize comes back to on this site (`make run`:
    http://127.0.0.1:8000/api/public/docs/oauth2-redirect.html); redirect URIs match exactly."""
    return f"{settings.SITE_URL}/api/public/docs/oauth2-redirect.html"


@dataclass
class DemoData:
    admin: User
    users: dict[str, User]
    organizers: list[tuple[Organizer, Application, str]]
    events: dict[str, Event]
    ticket_types: dict[str, TicketType]
    check_in_types: dict[str, CheckInType]

    def as_dict(self) -> dict:
        site = settings.SITE_URL
        return {
            "base_url": f"{site}/api/public",
            "auth_url": site,
            "admin": {"username": self.admin.username, "password": USERS["admin"]["password"]},
            "organizers": [
                {
                    "id": organizer.id,
                    "name": organizer.name,
                    "application": {
                        "client_id": app.client_id,
                        "client_secret": secret,
                        "redirect_uri": REDIRECT_URI,
                    },
                }
                for organizer, app, secret in self.organizers
            ],
            "users": {
                key: {
                    "id": user.id,
                    "username": user.username,
                    "password": USERS[key]["password"],
                    "email": user.email,
                }
                for key, user in self.users.items()
            },
            "events": {key: event.id for key, event in self.events.items()},
            "ticket_types": {key: tt.id for key, tt in self.ticket_types.items()},
            "check_in_types": {key: c.id for key, c in self.check_in_types.items()},
        }


def _user(username: str, **extra) -> User:
    spec = USERS[username]
    user, created = User.objects.get_or_create(
        username=username, defaults={"email": spec["email"], "full_name": spec["name"], **extra}
    )
    # A check costs a password hash even against a new user's empty password: skip it then.
    if created or not user.check_password(spec["password"]):
        user.set_password(spec["password"])
        user.save(update_fields=["password"])
    return user


def _application(organizer: Organizer, spec: dict) -> Application:
    app = Application.objects.filter(client_id=spec["client_id"]).first()
    if app is None:
        app = Application(
            client_id=spec["client_id"],
            name=f"{organizer.name} gate",
            organizer=organizer,
            client_type=Application.CLIENT_CONFIDENTIAL,
            authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
            allow_client_credentials=True,
        )
    # The callback first (CONTRACT §10 prints it), then the docs' Authorize.
    redirect_uris = f"{REDIRECT_URI} {docs_redirect_uri()}"
    changed = app.redirect_uris != redirect_uris
    app.redirect_uris = redirect_uris
    if not app.pk or not check_password(spec["client_secret"], app.client_secret):
        app.client_secret = spec["client_secret"]  # hashed on save
        changed = True
    if changed:
        app.save()
    return app


def _event(organizer: Organizer, title: str, **fields) -> tuple[Event, bool]:
    # Signed QR codes (CONTRACT §14), as every new event has them, with the key made up front.
    event, created = Event.objects.get_or_create(
        organizer=organizer, title=title, defaults={**fields, "signed_codes": True}
    )
    event_signing_key_ensure(event_id=event.pk)
    return event, created


def _ticket_type(event: Event, name: str, **fields) -> TicketType:
    return TicketType.objects.get_or_create(event=event, name=name, defaults=fields)[0]


def _sell(
    *, event: Event, buyer: User | None, holder: tuple[str, str], email: str, items, status: str
) -> Order:
    """An order as the shop would record it: one ticket per (ticket type, reference code)."""
    now = timezone.now()
    order = Order.objects.create(
        event=event,
        status=status,
        kind=Order.Kind.NORMAL,
        buyer=buyer,
        buyer_firstname=holder[0],
        buyer_lastname=holder[1],
        buyer_email=email,
        buyer_phone="+66812345678",
        buyer_phone_country="TH",
        paid_at=now if status == Order.Status.PAID else None,
    )
    for ticket_type, reference_code in items:
        claimed = ticket_type_claim_places(ticket_type_id=ticket_type.pk, via_api=False)
        assert claimed, f"demo ticket type {ticket_type} is full"
        Ticket.objects.create(
            event=event,
            order=order,
            ticket_type=ticket_type,
            holder=buyer,
            firstname=holder[0],
            lastname=holder[1],
            email=email,
            phone="+66812345678",
            reference_code=reference_code,
            registered_at=now,
        )
    return order


def _fill_simple(event: Event, types: dict[str, TicketType], buyer: User, staff: User) -> None:
    actor = Actor(user=staff)
    _fill_simple_buyer(event, types, buyer, actor)
    _fill_simple_crowd(event, types, actor)
    ticket_create(
        event=event,
        ticket_type_id=types["simple_api_limited"].id,
        firstname="Partner",
        lastname="Guest",
        email="partner.guest@demo.example",
        phone="0812345679",
        external_id="PARTNER-0001",
        reference_code="SSF-PARTNER-1",
        suppress_notifications=True,
        actor=actor,
    )


def _fill_simple_buyer(event: Event, types: dict[str, TicketType], buyer: User, actor) -> None:
    """The demo buyer's orders: paid (one ticket used), pending, and cancelled."""
    regular, vip = types["simple_regular"], types["simple_vip"]
    name = (buyer.full_name.split()[0], buyer.full_name.split()[-1])
    orders = {}
    for key, items, status in [
        ("paid", [(regular, "SSF-BUY-001"), (vip, "SSF-BUY-002")], Order.Status.PAID),
        ("pending", [(regular, "SSF-BUY-003")], Order.Status.PENDING),
        ("cancelled", [(vip, "SSF-BUY-004")], Order.Status.PAID),
    ]:
        orders[key] = _sell(
            event=event, buyer=buyer, holder=name, email=buyer.email, items=items, status=status
        )
    used = orders["paid"].tickets.get(ticket_type=regular)
    ticket_check_in(event=event, ticket_id=used.id, actor=actor)
    order_cancel(order_id=orders["cancelled"].id, actor=actor)


def _fill_simple_crowd(event: Event, types: dict[str, TicketType], actor) -> None:
    """Paid orders of two or three tickets per holder; every other holder's first is used."""
    regular, vip = types["simple_regular"], types["simple_vip"]
    code = 0
    for index, holder in enumerate(HOLDERS):
        items = []
        for _ in range(2 if index % 3 else 3):
            code += 1
            items.append((vip if code % 5 == 0 else regular, f"SSF-{code:04d}"))
        order = _sell(
            event=event,
            buyer=None,
            holder=holder,
            email=f"{holder[0].lower()}.{holder[1].lower()}@demo.example",
            items=items,
            status=Order.Status.PAID,
        )
        tickets = list(order.tickets.order_by("id"))
        if index % 2 == 0:
            ticket_check_in(event=event, ticket_id=tickets[0].id, actor=actor)
        if index == 5:
            ticket_revoke(event=event, ticket_id=tickets[-1].id, reason="Refunded", actor=actor)


def _fill_multi(event: Event, types: dict[str, TicketType], staff: User, day1: CheckInType) -> None:
    actor = Actor(user=staff)
    for index, holder in enumerate(HOLDERS[:6]):
        ticket_type = types["multi_vip"] if index % 3 == 0 else types["multi_regular"]
        order = _sell(
            event=event,
            buyer=None,
            holder=holder,
            email=f"{holder[0].lower()}@summit.demo.example",
            items=[(ticket_type, f"BTS-{index + 1:04d}")],
            status=Order.Status.PAID,
        )
        if index < 2:
            ticket = order.tickets.get()
            ticket_check_in(
                event=event, ticket_id=ticket.id, actor=actor, check_in_type_ids=[day1.id]
            )


def _fill_single(event: Event, ticket_type: TicketType, prefix: str) -> None:
    _sell(
        event=event,
        buyer=None,
        holder=HOLDERS[0],
        email="somsak@demo.example",
        items=[(ticket_type, f"{prefix}-0001")],
        status=Order.Status.PAID,
    )


@transaction.atomic
def demo_bootstrap() -> DemoData:
    """Create the demo data once; later runs change nothing and return the same objects."""
    admin = _user("admin", is_staff=True, is_superuser=True)
    staff = _user("staff", is_staff=True)
    buyer = _user("buyer")
    outsider = _user("outsider")

    organizers = []
    for spec in ORGANIZERS:
        # A contact address for the ticket page, the PDF and the email's Reply-To.
        contact = {
            "contact_email": f"hello@{spec['slug']}.example",
            "contact_phone": "+66 2 000 0000",
        }
        organizer, _ = Organizer.objects.get_or_create(
            slug=spec["slug"], defaults={"name": spec["name"], **contact}
        )
        organizers.append((organizer, _application(organizer, spec), spec["client_secret"]))
    main, other = organizers[0][0], organizers[1][0]
    Membership.objects.get_or_create(
        user=staff, organizer=main, defaults={"role": Membership.Role.ADMIN}
    )

    data = DemoData(
        admin=admin,
        users={"staff": staff, "buyer": buyer, "outsider": outsider},
        organizers=organizers,
        events={},
        ticket_types={},
        check_in_types={},
    )
    now = timezone.now().replace(minute=0, second=0, microsecond=0)
    _simple_event(data, main, now)
    _multi_event(data, main, now)
    _other_events(data, main, other, now)
    return data


def _simple_event(data: DemoData, main: Organizer, now) -> None:
    simple, created = _event(
        main,
        "Siam Sound Festival",
        status=Event.Status.ACTIVE,
        description="เทศกาลดนตรีกลางกรุง",
        description_en="A music festival in the heart of Bangkok.",
        location_name="Lumphini Park",
        location_address="Bangkok",
        start_at=now + timedelta(days=30),
        end_at=now + timedelta(days=30, hours=8),
    )
    data.events["simple"] = simple
    types = data.ticket_types
    types["simple_regular"] = _ticket_type(
        simple, "Regular", price=150000, quantity=1000, position=1
    )
    types["simple_vip"] = _ticket_type(simple, "VIP", price=450000, quantity=100, position=2)
    types["simple_api_limited"] = _ticket_type(
        simple, "Partner allocation", price=120000, quantity=50, api_quota=3, position=3
    )
    if created:
        _fill_simple(simple, types, data.users["buyer"], data.users["staff"])


def _multi_event(data: DemoData, main: Organizer, now) -> None:
    multi, created = _event(
        main,
        "Bangkok Tech Summit",
        status=Event.Status.ACTIVE,
        description="งานสัมมนาเทคโนโลยีสองวัน",
        description_en="Two days of talks, with a VIP lounge.",
        location_name="Queen Sirikit National Convention Center",
        location_address="Bangkok",
        start_at=now + timedelta(days=45),
        end_at=now + timedelta(days=46, hours=9),
    )
    data.events["multi"] = multi
    types, check_in_types = data.ticket_types, data.check_in_types
    types["multi_regular"] = _ticket_type(multi, "Conference pass", price=250000, quantity=500)
    types["multi_vip"] = _ticket_type(multi, "VIP pass", price=900000, quantity=50, position=1)
    for position, (key, name) in enumerate(
        [("day1", "Day 1"), ("day2", "Day 2"), ("vip_lounge", "VIP lounge")]
    ):
        check_in_types[key] = CheckInType.objects.get_or_create(
            event=multi, name=name, defaults={"position": position}
        )[0]
    check_in_types["vip_lounge"].ticket_types.set([types["multi_vip"]])
    if created:
        _fill_multi(multi, types, data.users["staff"], check_in_types["day1"])


def _other_events(data: DemoData, main: Organizer, other: Organizer, now) -> None:
    """A draft and an ended event of the main organizer, and the other organizer's event."""
    draft, _ = _event(
        main,
        "New Year Countdown",
        status=Event.Status.DRAFT,
        location_name="Iconsiam riverside",
        start_at=now + timedelta(days=60),
        end_at=now + timedelta(days=60, hours=4),
    )
    data.events["draft"] = draft
    _ticket_type(draft, "Early bird", price=99000, quantity=200)

    ended, created = _event(
        main,
        "Loy Krathong Night Market",
        status=Event.Status.ENDED,
        location_name="Chao Phraya pier",
        start_at=now - timedelta(days=20),
        end_at=now - timedelta(days=20) + timedelta(hours=6),
    )
    data.events["ended"] = ended
    ended_type = _ticket_type(ended, "Entry", price=0, quantity=300)
    if created:
        _fill_single(ended, ended_type, "LKN")

    other_event, created = _event(
        other,
        "Chiang Mai Jazz Weekend",
        status=Event.Status.ACTIVE,
        location_name="Tha Phae Gate",
        location_address="Chiang Mai",
        start_at=now + timedelta(days=50),
        end_at=now + timedelta(days=51),
    )
    data.events["other_organizer"] = other_event
    other_type = _ticket_type(other_event, "Weekend pass", price=180000, quantity=400)
    if created:
        _fill_single(other_event, other_type, "CMJ")
