import phonenumbers
from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower


class Order(models.Model):
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


class OrderFormAnswer(models.Model):
    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="form_answers")
    field = models.ForeignKey("events.FormField", on_delete=models.CASCADE, related_name="+")
    value = models.TextField(blank=True)

    class Meta:
        ordering = ["field__position", "field_id"]
        constraints = [
            models.UniqueConstraint(fields=["order", "field"], name="order_answer_unique_field")
        ]

    def __str__(self) -> str:
        return f"{self.field}: {self.value}"
