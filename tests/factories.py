"""One factory per model. Ticket factories keep the ticket type's capacity counters true."""

from datetime import timedelta

import factory
from django.db.models import F
from django.utils import timezone

from accounts.models import User
from events.models import CheckInType, Event, FormField, TicketType
from events.signing_keys import event_signing_key_ensure
from oauth_setup.models import Application
from organizers.models import Membership, Organizer
from tickets.models import Order, Ticket
from webhooks.models import WebhookEndpoint
from webhooks.secrets import secret_encrypt, secret_generate


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    full_name = factory.Faker("name")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.com")
    password = factory.PostGenerationMethodCall("set_password", "password")

    @factory.post_generation
    def _save_password(obj, create, extracted, **kwargs):
        if create:
            obj.save(update_fields=["password"])


class OrganizerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Organizer

    name = factory.Sequence(lambda n: f"Organizer {n}")
    slug = factory.Sequence(lambda n: f"organizer-{n}")


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    user = factory.SubFactory(UserFactory)
    organizer = factory.SubFactory(OrganizerFactory)
    role = Membership.Role.ADMIN


class ApplicationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Application

    name = factory.Sequence(lambda n: f"App {n}")
    organizer = factory.SubFactory(OrganizerFactory)
    client_type = Application.CLIENT_CONFIDENTIAL
    authorization_grant_type = Application.GRANT_AUTHORIZATION_CODE
    allow_client_credentials = True
    redirect_uris = "http://127.0.0.1:8765/callback"
    client_secret = "s3cret"


class EventFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Event
        skip_postgeneration_save = True

    organizer = factory.SubFactory(OrganizerFactory)
    title = factory.Sequence(lambda n: f"Event {n}")
    status = Event.Status.ACTIVE
    location_name = "Impact Arena"
    start_at = factory.LazyFunction(lambda: timezone.now() + timedelta(days=7))
    end_at = factory.LazyAttribute(lambda e: e.start_at + timedelta(hours=5))

    @factory.post_generation
    def signing_key(obj, create, extracted, **kwargs):
        """As the admin makes an event: with its signing key (CONTRACT §14)."""
        if create:
            event_signing_key_ensure(event_id=obj.pk)


class TicketTypeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = TicketType

    event = factory.SubFactory(EventFactory)
    name = factory.Sequence(lambda n: f"Type {n}")
    price = 150000
    quantity = 1000


class CheckInTypeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = CheckInType
        skip_postgeneration_save = True

    event = factory.SubFactory(EventFactory)
    name = factory.Sequence(lambda n: f"Gate {n}")
    position = factory.Sequence(int)

    @factory.post_generation
    def ticket_types(obj, create, extracted, **kwargs):
        if create and extracted:
            obj.ticket_types.set(extracted)


class FormFieldFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = FormField

    event = factory.SubFactory(EventFactory)
    label = factory.Sequence(lambda n: f"Question {n}")


class OrderFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Order

    event = factory.SubFactory(EventFactory)
    status = Order.Status.PAID
    paid_at = factory.LazyAttribute(
        lambda o: timezone.now() if o.status == Order.Status.PAID else None
    )
    buyer_firstname = factory.Faker("first_name")
    buyer_lastname = factory.Faker("last_name")
    buyer_email = factory.Sequence(lambda n: f"buyer{n}@example.com")
    buyer_phone = "+66812345678"
    buyer_phone_country = "TH"


class TicketFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Ticket

    event = factory.SubFactory(EventFactory)
    ticket_type = factory.SubFactory(TicketTypeFactory, event=factory.SelfAttribute("..event"))
    order = factory.SubFactory(OrderFactory, event=factory.SelfAttribute("..event"))
    status = Ticket.Status.ACTIVE
    firstname = factory.Faker("first_name")
    lastname = factory.Faker("last_name")
    email = factory.Sequence(lambda n: f"holder{n}@example.com")
    phone = "+66812345678"
    reference_code = factory.Sequence(lambda n: f"REF{n:06d}")
    used_at = factory.LazyAttribute(
        lambda t: timezone.now() if t.status == Ticket.Status.USED else None
    )

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        ticket = super()._create(model_class, *args, **kwargs)
        if ticket.status != Ticket.Status.REVOKED:
            counters = {"sold_count": F("sold_count") + 1}
            if ticket.issued_via_api:
                counters["api_sold_count"] = F("api_sold_count") + 1
            TicketType.objects.filter(pk=ticket.ticket_type_id).update(**counters)
        return ticket


class WebhookEndpointFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = WebhookEndpoint

    organizer = factory.SubFactory(OrganizerFactory)
    url = factory.Sequence(lambda n: f"https://hooks{n}.example.com/webhook")
    event_types = factory.LazyFunction(lambda: ["*"])
    secret_encrypted = factory.LazyFunction(lambda: secret_encrypt(secret_generate()))
