import phonenumbers
from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower, Upper

from tickets.codes import page_token_generate


class Order(models.Model):
    """A purchase: one buyer's tickets of one event. Check-in admits a ticket only if its order
    is paid."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        PAID = "paid", "Paid"
        CANCELLED = "cancelled", "Cancelled"

    class Kind(models.TextChoices):
        NORMAL = "normal", "Normal"
        EXTERNAL = "external", "External"

    event = models.ForeignKey("events.Event", on_delete=models.PROTECT, related_name="orders")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.NORMAL)
    buyer = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        blank=True,
        null=True,
        related_name="orders",
    )
    buyer_firstname = models.CharField(max_length=150)
    buyer_lastname = models.CharField(max_length=150)
    buyer_email = models.EmailField()
    buyer_phone = models.CharField(max_length=32, blank=True, help_text="E.164")
    buyer_phone_country = models.CharField(max_length=2, blank=True, help_text="ISO 3166 alpha-2")
    paid_at = models.DateTimeField(blank=True, null=True)
    cancelled_at = models.DateTimeField(blank=True, null=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "orders_order"  # created by the `orders` app, whose migrations hold its history
        constraints = [
            models.CheckConstraint(
                condition=~Q(status="paid") | Q(paid_at__isnull=False),
                name="order_paid_has_paid_at",
            ),
        ]
        indexes = [
            models.Index(fields=["event", "id"], name="order_event_id_idx"),
            models.Index(Lower("buyer_email"), name="order_buyer_email_lower_idx"),
        ]

    def __str__(self) -> str:
        return f"Order #{self.pk} — {self.buyer_firstname} {self.buyer_lastname}"

    def _parsed_phone(self) -> phonenumbers.PhoneNumber | None:
        if not self.buyer_phone:
            return None
        try:
            return phonenumbers.parse(self.buyer_phone, self.buyer_phone_country or None)
        except phonenumbers.NumberParseException:
            return None

    @property
    def buyer_phone_country_code(self) -> str | None:
        parsed = self._parsed_phone()
        return str(parsed.country_code) if parsed else None

    @property
    def buyer_phone_local(self) -> str | None:
        parsed = self._parsed_phone()
        if parsed is None:
            return None
        national = phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.NATIONAL)
        return "".join(ch for ch in national if ch.isdigit())


class FormAnswer(models.Model):
    """An answer to one question of the event's form, in the form's order."""

    field = models.ForeignKey("events.FormField", on_delete=models.CASCADE, related_name="+")
    value = models.TextField(blank=True)

    class Meta:
        abstract = True
        ordering = ["field__position", "field_id"]

    def __str__(self) -> str:
        return f"{self.field}: {self.value}"


class OrderFormAnswer(FormAnswer):
    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="form_answers")

    class Meta(FormAnswer.Meta):
        db_table = "orders_orderformanswer"
        constraints = [
            models.UniqueConstraint(fields=["order", "field"], name="order_answer_unique_field")
        ]


class Ticket(models.Model):
    """One admission. Its status moves active → used → active (renew) and active → revoked."""

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        USED = "used", "Used"
        REVOKED = "revoked", "Revoked"

    class Kind(models.TextChoices):
        NORMAL = "normal", "Normal"
        EXTERNAL = "external", "External"
        COMPLIMENTARY = "complimentary", "Complimentary"

    # No index of its own: every index below leads with it. A check-in writes each index of the
    # row (status and `updated_at` are indexed, so the update is never HOT): each one it does
    # not need costs the gate.
    event = models.ForeignKey(
        "events.Event", on_delete=models.PROTECT, related_name="tickets", db_index=False
    )
    order = models.ForeignKey(Order, on_delete=models.PROTECT, related_name="tickets")
    ticket_type = models.ForeignKey(
        "events.TicketType", on_delete=models.PROTECT, related_name="tickets"
    )
    holder = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        blank=True,
        null=True,
        related_name="tickets",
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.NORMAL)
    firstname = models.CharField(max_length=150, blank=True)
    lastname = models.CharField(max_length=150, blank=True)
    email = models.EmailField(blank=True)
    phone = models.CharField(max_length=32, blank=True, help_text="E.164")
    reference_code = models.CharField(max_length=32)
    external_id = models.CharField(max_length=64, blank=True, null=True)
    nfc_uid = models.CharField(max_length=64, blank=True, null=True)
    issued_via_api = models.BooleanField(default=False, editable=False)
    revoke_note = models.TextField(blank=True, null=True)
    used_at = models.DateTimeField(blank=True, null=True)
    registered_at = models.DateTimeField(blank=True, null=True)
    # The ticket page's address (CONTRACT §14): not the reference code, and replaced to revoke it.
    page_token = models.CharField(max_length=43, default=page_token_generate, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # The sync feed's position (CONTRACT §11). Database triggers set both on every insert and
    # update of the row, when its check-in types change (migration 0005) and when its order's
    # payment state changes (0011), whatever path made the change; the values written from
    # Python are ignored. `change_xid` is the writing transaction's id on PostgreSQL (0 on
    # SQLite), `change_seq` a counter.
    change_xid = models.BigIntegerField(default=0, editable=False)
    change_seq = models.BigIntegerField(default=0, editable=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["event", "reference_code"], name="ticket_unique_reference_code"
            ),
            # A constraint rather than `unique=True`, which adds a LIKE index on PostgreSQL.
            models.UniqueConstraint(fields=["page_token"], name="ticket_unique_page_token"),
            models.UniqueConstraint(
                fields=["event", "external_id"],
                condition=Q(external_id__isnull=False),
                name="ticket_unique_external_id",
            ),
            models.UniqueConstraint(
                fields=["event", "nfc_uid"],
                condition=Q(nfc_uid__isnull=False),
                name="ticket_unique_nfc_uid",
            ),
            # Lookups ignore case, so codes are stored upper-case and the index stays exact.
            models.CheckConstraint(
                condition=Q(reference_code=Upper("reference_code")),
                name="ticket_reference_code_upper",
            ),
            models.CheckConstraint(
                condition=(Q(status="used") & Q(used_at__isnull=False))
                | (~Q(status="used") & Q(used_at__isnull=True)),
                name="ticket_used_iff_used_at",
            ),
        ]
        indexes = [
            models.Index(fields=["event", "id"], name="ticket_event_id_idx"),
            models.Index(fields=["event", "status", "id"], name="ticket_event_status_idx"),
            models.Index(fields=["event", "updated_at", "id"], name="ticket_event_updated_idx"),
            models.Index(fields=["event", "ticket_type", "id"], name="ticket_event_type_idx"),
            models.Index(Lower("email"), name="ticket_email_lower_idx"),
            # The admin's exact search by tag, any event. Partial: most tickets have no tag,
            # and their check-ins then write nothing here.
            models.Index(
                Upper("nfc_uid"),
                condition=Q(nfc_uid__isnull=False),
                name="ticket_nfc_uid_upper_idx",
            ),
            models.Index(
                fields=["event", "change_xid", "change_seq"], name="ticket_event_change_idx"
            ),
            # The live counts read it alone (an index-only scan), whatever the event's size.
            models.Index(
                fields=["event", "ticket_type", "status"], name="ticket_event_type_status_idx"
            ),
        ]

    def __str__(self) -> str:
        return self.reference_code

    @property
    def holder_name(self) -> str:
        return f"{self.firstname} {self.lastname}".strip()


class TicketFormAnswer(FormAnswer):
    ticket = models.ForeignKey(Ticket, on_delete=models.CASCADE, related_name="form_answers")

    class Meta(FormAnswer.Meta):
        constraints = [
            models.UniqueConstraint(fields=["ticket", "field"], name="ticket_answer_unique_field")
        ]


class ImportUpload(models.Model):
    """A CSV file given to the admin's import, kept from its preview to its confirmation, which
    names it by a signed id (`tickets.services.import_upload`): the browser sends the file once,
    and a confirmation is a small request. Deleted when imported, or a day later."""

    event = models.ForeignKey("events.Event", on_delete=models.CASCADE, related_name="+")
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    data = models.BinaryField()
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    def __str__(self) -> str:
        return f"Import upload #{self.pk}"


# The ticket email's outcome: a model in a module of its own (this one is near its size limit).
from .email_status import TicketEmail  # noqa: E402, F401
