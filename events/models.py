from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class Event(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", _("Draft")
        ACTIVE = "active", _("Active")
        ENDED = "ended", _("Ended")

    organizer = models.ForeignKey(
        "organizers.Organizer",
        on_delete=models.PROTECT,
        related_name="events",
        verbose_name=_("organizer"),
    )
    title = models.CharField(max_length=255, verbose_name=_("title"))
    description = models.TextField(blank=True, help_text=_("Thai"), verbose_name=_("description"))
    description_en = models.TextField(
        blank=True, help_text=_("English"), verbose_name=_("description en")
    )
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.DRAFT, verbose_name=_("status")
    )
    location_name = models.CharField(max_length=255, blank=True, verbose_name=_("location name"))
    location_address = models.CharField(
        max_length=500, blank=True, verbose_name=_("location address")
    )
    cover = models.ImageField(
        upload_to="events/covers/", blank=True, null=True, verbose_name=_("cover")
    )
    cover_resized = models.ImageField(
        upload_to="events/covers/resized/", blank=True, null=True, verbose_name=_("cover resized")
    )
    poster = models.ImageField(
        upload_to="events/posters/", blank=True, null=True, verbose_name=_("poster")
    )
    poster_resized = models.ImageField(
        upload_to="events/posters/resized/", blank=True, null=True, verbose_name=_("poster resized")
    )
    display_icon = models.ImageField(
        upload_to="events/icons/", blank=True, null=True, verbose_name=_("display icon")
    )
    signed_codes = models.BooleanField(
        default=True,
        verbose_name=_("signed codes"),
        help_text=_(
            "The QR code carries a signed code (T1.…) instead of the bare reference code, "
            "so a scanner can admit offline a ticket sold after its last sync, checking the "
            "signature with the event's keys from the sync feed. Scanners that only read "
            "reference codes must be updated before you turn this on; the printed reference "
            "code works as before either way."
        ),
    )
    start_at = models.DateTimeField(verbose_name=_("start at"))
    end_at = models.DateTimeField(verbose_name=_("end at"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("event")
        verbose_name_plural = _("events")
        constraints = [
            models.CheckConstraint(
                condition=Q(end_at__gte=F("start_at")), name="event_ends_after_start"
            ),
        ]
        indexes = [
            models.Index(fields=["organizer", "status"], name="event_org_status_idx"),
            models.Index(fields=["organizer", "start_at"], name="event_org_start_idx"),
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def effective_status(self) -> str:
        """What clients see: an active event whose end has passed is over (CONTRACT §8)."""
        if self.status == self.Status.ACTIVE and self.end_at <= timezone.now():
            return self.Status.ENDED
        return self.status

    @property
    def display_location_name(self) -> str:
        return ", ".join(part for part in (self.location_name, self.location_address) if part)


class TicketType(models.Model):
    """What a ticket buys. `sold_count` and `api_sold_count` are capacity counters.

    They count non-revoked tickets and are only changed by conditional UPDATEs in the ticket
    services, so concurrent sales cannot pass `quantity` or `api_quota`; the check constraints
    are the backstop.
    """

    class Kind(models.TextChoices):
        NORMAL = "normal", _("Normal")
        PACK = "pack", _("Pack")

    class Status(models.TextChoices):
        ON_SALE = "on_sale", _("On sale")
        HIDDEN = "hidden", _("Hidden")
        CLOSED = "closed", _("Closed")

    SOLD_OUT = "sold_out"

    event = models.ForeignKey(
        Event, on_delete=models.CASCADE, related_name="ticket_types", verbose_name=_("event")
    )
    name = models.CharField(max_length=200, verbose_name=_("name"))
    price = models.IntegerField(help_text=_("Satangs (1/100 baht)"), verbose_name=_("price"))
    kind = models.CharField(
        max_length=16, choices=Kind.choices, default=Kind.NORMAL, verbose_name=_("kind")
    )
    pack_size = models.PositiveSmallIntegerField(
        blank=True,
        null=True,
        help_text=_("Tickets in one pack; only for kind pack."),
        verbose_name=_("pack size"),
    )
    quantity = models.IntegerField(
        help_text=_("Tickets that may exist, not counting revoked ones."),
        verbose_name=_("quantity"),
    )
    api_quota = models.IntegerField(
        blank=True,
        null=True,
        help_text=_("Of those, how many the API may issue; empty: no limit."),
        verbose_name=_("api quota"),
    )
    sold_count = models.IntegerField(default=0, editable=False, verbose_name=_("sold count"))
    api_sold_count = models.IntegerField(
        default=0, editable=False, verbose_name=_("api sold count")
    )
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.ON_SALE, verbose_name=_("status")
    )
    position = models.PositiveIntegerField(default=0, verbose_name=_("position"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("ticket type")
        verbose_name_plural = _("ticket types")
        ordering = ["position", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(price__gte=0), name="ticket_type_price_not_negative"
            ),
            models.CheckConstraint(
                condition=Q(quantity__gte=0), name="ticket_type_quantity_not_negative"
            ),
            models.CheckConstraint(
                condition=Q(api_quota__isnull=True) | Q(api_quota__gte=0),
                name="ticket_type_api_quota_not_negative",
            ),
            models.CheckConstraint(
                condition=Q(sold_count__gte=0, sold_count__lte=F("quantity")),
                name="ticket_type_sold_within_quantity",
            ),
            models.CheckConstraint(
                condition=Q(api_sold_count__gte=0)
                & (Q(api_quota__isnull=True) | Q(api_sold_count__lte=F("api_quota"))),
                name="ticket_type_api_sold_within_quota",
            ),
            models.CheckConstraint(
                condition=Q(kind="pack", pack_size__isnull=False, pack_size__gte=2)
                | (~Q(kind="pack") & Q(pack_size__isnull=True)),
                name="ticket_type_pack_size_only_for_packs",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event} — {self.name}"

    @property
    def effective_status(self) -> str:
        if self.status == self.Status.ON_SALE and self.sold_count >= self.quantity:
            return self.SOLD_OUT
        return self.status


class CheckInType(models.Model):
    """One gate or session of a multi-check-in event (day 1, day 2, VIP lounge)."""

    event = models.ForeignKey(
        Event, on_delete=models.CASCADE, related_name="check_in_types", verbose_name=_("event")
    )
    name = models.CharField(max_length=200, verbose_name=_("name"))
    position = models.PositiveIntegerField(default=0, verbose_name=_("position"))
    ticket_types = models.ManyToManyField(
        TicketType,
        blank=True,
        related_name="check_in_types",
        help_text=_("Leave empty to admit every ticket type."),
        verbose_name=_("ticket types"),
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("check-in type")
        verbose_name_plural = _("check-in types")
        ordering = ["position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["event", "name"], name="check_in_type_unique_name")
        ]

    def __str__(self) -> str:
        return f"{self.event} — {self.name}"


class FormField(models.Model):
    """A custom question asked of buyers (per order) or holders (per ticket)."""

    class AppliesTo(models.TextChoices):
        ORDER = "order", _("Order")
        TICKET = "ticket", _("Ticket")

    event = models.ForeignKey(
        Event, on_delete=models.CASCADE, related_name="form_fields", verbose_name=_("event")
    )
    label = models.CharField(max_length=255, verbose_name=_("label"))
    applies_to = models.CharField(
        max_length=8,
        choices=AppliesTo.choices,
        default=AppliesTo.TICKET,
        verbose_name=_("applies to"),
    )
    required = models.BooleanField(default=False, verbose_name=_("required"))
    position = models.PositiveIntegerField(default=0, verbose_name=_("position"))

    class Meta:
        verbose_name = _("form field")
        verbose_name_plural = _("form fields")
        ordering = ["position", "id"]

    def __str__(self) -> str:
        return self.label


class EventSigningKey(models.Model):
    """An Ed25519 key that signs the event's ticket codes (CONTRACT §14).

    The newest key not retired signs new codes; older ones keep verifying the codes they signed
    until retired. The private key is stored encrypted (`ticketing.encryption`); the public key
    in the clear, as the sync feed publishes it.
    """

    event = models.ForeignKey(
        Event, on_delete=models.CASCADE, related_name="signing_keys", verbose_name=_("event")
    )
    key_id = models.CharField(max_length=16, unique=True, editable=False, verbose_name=_("key id"))
    public_key = models.BinaryField(max_length=32, editable=False, verbose_name=_("public key"))
    private_key_encrypted = models.TextField(editable=False, verbose_name=_("private key"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    retired_at = models.DateTimeField(
        blank=True, null=True, editable=False, verbose_name=_("retired at")
    )

    class Meta:
        ordering = ["-id"]
        verbose_name = _("signing key")
        verbose_name_plural = _("signing keys")
        indexes = [models.Index(fields=["event", "retired_at"], name="signing_key_event_idx")]

    def __str__(self) -> str:
        return self.key_id
