from django.db import models
from django.db.models import F, Q
from django.utils import timezone


class Event(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        ACTIVE = "active", "Active"
        ENDED = "ended", "Ended"

    organizer = models.ForeignKey(
        "organizers.Organizer", on_delete=models.PROTECT, related_name="events"
    )
    title = models.CharField(max_length=255)
    description = models.TextField(blank=True, help_text="Thai")
    description_en = models.TextField(blank=True, help_text="English")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    location_name = models.CharField(max_length=255, blank=True)
    location_address = models.CharField(max_length=500, blank=True)
    cover = models.ImageField(upload_to="events/covers/", blank=True, null=True)
    cover_resized = models.ImageField(upload_to="events/covers/resized/", blank=True, null=True)
    poster = models.ImageField(upload_to="events/posters/", blank=True, null=True)
    poster_resized = models.ImageField(upload_to="events/posters/resized/", blank=True, null=True)
    display_icon = models.ImageField(upload_to="events/icons/", blank=True, null=True)
    start_at = models.DateTimeField()
    end_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
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
        NORMAL = "normal", "Normal"
        PACK = "pack", "Pack"

    class Status(models.TextChoices):
        ON_SALE = "on_sale", "On sale"
        HIDDEN = "hidden", "Hidden"
        CLOSED = "closed", "Closed"

    SOLD_OUT = "sold_out"

    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="ticket_types")
    name = models.CharField(max_length=200)
    price = models.IntegerField(help_text="Satangs (1/100 baht)")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.NORMAL)
    pack_size = models.PositiveSmallIntegerField(
        blank=True, null=True, help_text="Tickets in one pack; only for kind pack."
    )
    quantity = models.IntegerField(help_text="Tickets that may exist, not counting revoked ones.")
    api_quota = models.IntegerField(
        blank=True, null=True, help_text="Of those, how many the API may issue; empty: no limit."
    )
    sold_count = models.IntegerField(default=0, editable=False)
    api_sold_count = models.IntegerField(default=0, editable=False)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ON_SALE)
    position = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
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

    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="check_in_types")
    name = models.CharField(max_length=200)
    position = models.PositiveIntegerField(default=0)
    ticket_types = models.ManyToManyField(
        TicketType,
        blank=True,
        related_name="check_in_types",
        help_text="Leave empty to admit every ticket type.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["event", "name"], name="check_in_type_unique_name")
        ]

    def __str__(self) -> str:
        return f"{self.event} — {self.name}"


class FormField(models.Model):
    """A custom question asked of buyers (per order) or holders (per ticket)."""

    class AppliesTo(models.TextChoices):
        ORDER = "order", "Order"
        TICKET = "ticket", "Ticket"

    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="form_fields")
    label = models.CharField(max_length=255)
    applies_to = models.CharField(max_length=8, choices=AppliesTo.choices, default=AppliesTo.TICKET)
    required = models.BooleanField(default=False)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["position", "id"]

    def __str__(self) -> str:
        return self.label
