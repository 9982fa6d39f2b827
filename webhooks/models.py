"""Webhook endpoints of organizers, the events sent to them, and every delivery attempt."""

import uuid

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.db.models import Q
from django.utils import timezone

from organizers.models import Organizer


def new_event_id() -> str:
    return f"evt_{uuid.uuid4().hex}"


class WebhookEndpoint(models.Model):
    """A URL of an organizer's that receives the event types it asked for (CONTRACT §13)."""

    organizer = models.ForeignKey(
        Organizer, on_delete=models.CASCADE, related_name="webhook_endpoints"
    )
    url = models.CharField(max_length=2000)
    # Event type names, or ["*"] for all of them.
    event_types = models.JSONField(default=list)
    is_active = models.BooleanField(default=True)
    # The signing secret (`whsec_...`), encrypted (webhooks.secrets): a dump alone does not sign.
    secret_encrypted = models.TextField(editable=False)
    # Start of the current run of failed attempts; None after a success.
    failing_since = models.DateTimeField(null=True, blank=True, editable=False)
    disabled_at = models.DateTimeField(null=True, blank=True, editable=False)
    # The circuit breaker (delivering): attempts in a row that got no answer in good time; while
    # backed off, until when its due attempts are not sent; the length of its last cool-down,
    # which the next one doubles (0: closed since its last answer).
    unanswered_count = models.PositiveIntegerField(default=0, editable=False)
    backoff_until = models.DateTimeField(null=True, blank=True, editable=False)
    backoff_seconds = models.PositiveIntegerField(default=0, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["organizer", "is_active"], name="webhook_endpoint_active")]

    def __str__(self) -> str:
        return self.url

    def subscribes_to(self, event_type: str) -> bool:
        return "*" in self.event_types or event_type in self.event_types


class WebhookEvent(models.Model):
    """One event as sent: its `id` is the `webhook-id` header, the same on every retry."""

    class Type(models.TextChoices):
        TICKET_CREATED = "ticket.created"
        TICKET_CHECKED_IN = "ticket.checked_in"
        TICKET_RENEWED = "ticket.renewed"
        TICKET_REVOKED = "ticket.revoked"
        ORDER_CANCELLED = "order.cancelled"
        PING = "ping"

    id = models.CharField(primary_key=True, max_length=40, default=new_event_id, editable=False)
    organizer = models.ForeignKey(
        Organizer, on_delete=models.CASCADE, related_name="webhook_events"
    )
    type = models.CharField(max_length=32, choices=Type.choices)
    # The body sent, exactly: {"id", "type", "created_at", "organizer_id", "event_id", "data"}.
    # `data` is None only in an event recorded by a change's statement (`source`), until its
    # dispatch renders it.
    payload = models.JSONField(encoder=DjangoJSONEncoder)
    created_at = models.DateTimeField(default=timezone.now)
    # The transactional outbox (`outbox`): None until a dispatcher has queued the event's
    # sending, in the transaction that marks it.
    dispatched_at = models.DateTimeField(null=True, blank=True, editable=False)
    # An event recorded by a change's SQL statement: the rows it changed, and the dotted path of
    # the function that renders `data` from them (`outbox.webhook_events_complete`).
    source = models.JSONField(null=True, blank=True, editable=False)
    renderer = models.CharField(max_length=200, blank=True, default="", editable=False)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(
                fields=["created_at"],
                name="webhook_event_outbox",
                condition=Q(dispatched_at__isnull=True),
            )
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.id}"


class WebhookDelivery(models.Model):
    """An event on its way to one endpoint: pending until a 2xx, or failed after retries."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"

    event = models.ForeignKey(WebhookEvent, on_delete=models.CASCADE, related_name="deliveries")
    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempt_count = models.PositiveIntegerField(default=0)
    # Retries go on until this is WEBHOOK_RETRY_FOR_SECONDS old (creation, or a redelivery).
    pending_since = models.DateTimeField(default=timezone.now)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "webhook deliveries"
        constraints = [
            models.UniqueConstraint(fields=["event", "endpoint"], name="webhook_delivery_unique")
        ]

    def __str__(self) -> str:
        return f"{self.event_id} → {self.endpoint_id}"


class WebhookAttempt(models.Model):
    """One POST: when, what came back (or why nothing did), how long it took."""

    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempts")
    attempted_at = models.DateTimeField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField()
    error = models.CharField(max_length=500, blank=True)
    # When the next attempt is due; None after a success or the last attempt.
    next_retry_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["attempted_at", "id"]

    def __str__(self) -> str:
        return f"{self.attempted_at:%Y-%m-%d %H:%M:%S} {self.status_code or self.error}"
