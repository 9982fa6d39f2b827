import phonenumbers
from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower, Upper
from django.utils.translation import gettext_lazy as _

from tickets.codes import page_token_generate


class Order(models.Model):
    """A purchase: one buyer's tickets of one event. Check-in admits a ticket only if its order
    is paid."""

    class Status(models.TextChoices):
        PENDING = "pending", _("Pending")
        PAID = "paid", _("Paid")
        CANCELLED = "cancelled", _("Cancelled")

    class Kind(models.TextChoices):
        NORMAL = "normal", _("Normal")
        EXTERNAL = "external", _("External")

    event = models.ForeignKey(
        "events.Event", on_delete=models.PROTECT, related_name="orders", verbose_name=_("event")
    )
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.PENDING, verbose_name=_("status")
    )
    kind = models.CharField(
        max_length=16, choices=Kind.choices, default=Kind.NORMAL, verbose_name=_("kind")
    )
    buyer = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        blank=True,
        null=True,
        related_name="orders",
        verbose_name=_("buyer"),
    )
    buyer_firstname = models.CharField(max_length=150, verbose_name=_("buyer firstname"))
    buyer_lastname = models.CharField(max_length=150, verbose_name=_("buyer lastname"))
    buyer_email = models.EmailField(verbose_name=_("buyer email"))
    buyer_phone = models.CharField(
        max_length=32, blank=True, help_text=_("E.164"), verbose_name=_("buyer phone")
    )
    buyer_phone_country = models.CharField(
        max_length=2,
        blank=True,
        help_text=_("ISO 3166 alpha-2"),
        verbose_name=_("buyer phone country"),
    )
    paid_at = models.DateTimeField(blank=True, null=True, verbose_name=_("paid at"))
    cancelled_at = models.DateTimeField(blank=True, null=True, verbose_name=_("cancelled at"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("order")
        verbose_name_plural = _("orders")
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
        number = _("Order #%(id)s") % {"id": self.pk}
        return f"{number} — {self.buyer_firstname} {self.buyer_lastname}"

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

    field = models.ForeignKey(
        "events.FormField", on_delete=models.CASCADE, related_name="+", verbose_name=_("field")
    )
    value = models.TextField(blank=True, verbose_name=_("value"))

    class Meta:
        abstract = True
        ordering = ["field__position", "field_id"]

    def __str__(self) -> str:
        return f"{self.field}: {self.value}"


class OrderFormAnswer(FormAnswer):
    order = models.ForeignKey(
        Order, on_delete=models.CASCADE, related_name="form_answers", verbose_name=_("order")
    )

    class Meta(FormAnswer.Meta):
        verbose_name = _("order form answer")
        verbose_name_plural = _("order form answers")
        db_table = "orders_orderformanswer"
        constraints = [
            models.UniqueConstraint(fields=["order", "field"], name="order_answer_unique_field")
        ]


class Ticket(models.Model):
    """One admission. Its status moves active → used → active (renew) and active → revoked."""

    class Status(models.TextChoices):
        ACTIVE = "active", _("Active")
        USED = "used", _("Used")
        REVOKED = "revoked", _("Revoked")

    class Kind(models.TextChoices):
        NORMAL = "normal", _("Normal")
        EXTERNAL = "external", _("External")
        COMPLIMENTARY = "complimentary", _("Complimentary")

    # No index of its own: every index below leads with it. A check-in writes each index of the
    # row (status and `updated_at` are indexed, so the update is never HOT): each one it does
    # not need costs the gate.
    event = models.ForeignKey(
        "events.Event",
        on_delete=models.PROTECT,
        related_name="tickets",
        db_index=False,
        verbose_name=_("event"),
    )
    order = models.ForeignKey(
        Order, on_delete=models.PROTECT, related_name="tickets", verbose_name=_("order")
    )
    ticket_type = models.ForeignKey(
        "events.TicketType",
        on_delete=models.PROTECT,
        related_name="tickets",
        verbose_name=_("ticket type"),
    )
    holder = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        blank=True,
        null=True,
        related_name="tickets",
        verbose_name=_("holder"),
    )
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.ACTIVE, verbose_name=_("status")
    )
    kind = models.CharField(
        max_length=16, choices=Kind.choices, default=Kind.NORMAL, verbose_name=_("kind")
    )
    firstname = models.CharField(max_length=150, blank=True, verbose_name=_("firstname"))
    lastname = models.CharField(max_length=150, blank=True, verbose_name=_("lastname"))
    email = models.EmailField(blank=True, verbose_name=_("email"))
    phone = models.CharField(
        max_length=32, blank=True, help_text=_("E.164"), verbose_name=_("phone")
    )
    reference_code = models.CharField(max_length=32, verbose_name=_("reference code"))
    external_id = models.CharField(
        max_length=64, blank=True, null=True, verbose_name=_("external id")
    )
    nfc_uid = models.CharField(max_length=64, blank=True, null=True, verbose_name=_("nfc uid"))
    issued_via_api = models.BooleanField(
        default=False, editable=False, verbose_name=_("issued via api")
    )
    revoke_note = models.TextField(blank=True, null=True, verbose_name=_("revoke note"))
    used_at = models.DateTimeField(blank=True, null=True, verbose_name=_("used at"))
    registered_at = models.DateTimeField(blank=True, null=True, verbose_name=_("registered at"))
    # The ticket page's address (CONTRACT §14): not the reference code, and replaced to revoke it.
    page_token = models.CharField(
        max_length=43, default=page_token_generate, editable=False, verbose_name=_("page token")
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))
    # The sync feed's position (CONTRACT §11). Database triggers set both on every insert and
    # update of the row, when its check-in types change (migration 0005) and when its order's
    # payment state changes (0011), whatever path made the change; the values written from
    # Python are ignored. `change_xid` is the writing transaction's id on PostgreSQL (0 on
    # SQLite), `change_seq` a counter.
    change_xid = models.BigIntegerField(default=0, editable=False, verbose_name=_("change xid"))
    change_seq = models.BigIntegerField(default=0, editable=False, verbose_name=_("change seq"))

    class Meta:
        verbose_name = _("ticket")
        verbose_name_plural = _("tickets")
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
    ticket = models.ForeignKey(
        Ticket, on_delete=models.CASCADE, related_name="form_answers", verbose_name=_("ticket")
    )

    class Meta(FormAnswer.Meta):
        verbose_name = _("ticket form answer")
        verbose_name_plural = _("ticket form answers")
        constraints = [
            models.UniqueConstraint(fields=["ticket", "field"], name="ticket_answer_unique_field")
        ]


class ImportUpload(models.Model):
    """A CSV file given to the admin's import, kept from its preview to its confirmation, which
    names it by a signed id (`tickets.services.import_upload`): the browser sends the file once,
    and a confirmation is a small request. Deleted when imported, or a day later."""

    event = models.ForeignKey(
        "events.Event", on_delete=models.CASCADE, related_name="+", verbose_name=_("event")
    )
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="+",
        verbose_name=_("uploaded by"),
    )
    data = models.BinaryField(verbose_name=_("data"))
    created_at = models.DateTimeField(
        auto_now_add=True, db_index=True, verbose_name=_("created at")
    )

    class Meta:
        verbose_name = _("import upload")
        verbose_name_plural = _("import uploads")

    def __str__(self) -> str:
        return f"Import upload #{self.pk}"


# The ticket email's outcome: a model in a module of its own (this one is near its size limit).
from .email_status import TicketEmail  # noqa: E402, F401
