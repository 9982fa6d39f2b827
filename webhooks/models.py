"""Webhook endpoints of organizers, the events sent to them, and every delivery attempt."""

import uuid

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from organizers.models import Organizer
from ticketing.dates import admin_date


def new_event_id() -> str:
    return f"evt_{uuid.uuid4().hex}"


class WebhookEndpoint(models.Model):
    """A URL of an organizer's that receives the event types it asked for (CONTRACT §13)."""

    organizer = models.ForeignKey(
        Organizer,
        on_delete=models.CASCADE,
        related_name="webhook_endpoints",
        verbose_name=_("organizer"),
    )
    url = models.CharField(max_length=2000, verbose_name=_("url"))
    # Event type names, or ["*"] for all of them.
    event_types = models.JSONField(default=list, verbose_name=_("event types"))
    is_active = models.BooleanField(default=True, verbose_name=_("is active"))
    # The signing secret (`whsec_...`), encrypted (webhooks.secrets): a dump alone does not sign.
    secret_encrypted = models.TextField(editable=False, verbose_name=_("secret encrypted"))
    # Start of the current run of failed attempts; None after a success.
    failing_since = models.DateTimeField(
        null=True, blank=True, editable=False, verbose_name=_("failing since")
    )
    disabled_at = models.DateTimeField(
        null=True, blank=True, editable=False, verbose_name=_("disabled at")
    )
    # The circuit breaker (delivering): attempts in a row that got no answer in good time; while
    # backed off, until when its due attempts are not sent; the length of its last cool-down,
    # which the next one doubles (0: closed since its last answer).
    unanswered_count = models.PositiveIntegerField(
        default=0, editable=False, verbose_name=_("unanswered count")
    )
    backoff_until = models.DateTimeField(
        null=True, blank=True, editable=False, verbose_name=_("backoff until")
    )
    backoff_seconds = models.PositiveIntegerField(
        default=0, editable=False, verbose_name=_("backoff seconds")
    )
    # When it last answered an attempt in good time (to the second or so: written at most once
    # a second), so that lanes held by attempts to it are not taken for hung ones (delivering).
    answered_at = models.DateTimeField(
        null=True, blank=True, editable=False, verbose_name=_("answered at")
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("webhook endpoint")
        verbose_name_plural = _("webhook endpoints")
        ordering = ["id"]
        indexes = [models.Index(fields=["organizer", "is_active"], name="webhook_endpoint_active")]

    def __str__(self) -> str:
        return self.url

    def subscribes_to(self, event_type: str) -> bool:
        return "*" in self.event_types or event_type in self.event_types


class WebhookEvent(models.Model):
    """One event as sent: its `id` is the `webhook-id` header, the same on every retry."""

    class Type(models.TextChoices):
        TICKET_CREATED = "ticket.created", _("Ticket created")
        TICKET_CHECKED_IN = "ticket.checked_in", _("Ticket checked in")
        TICKET_RENEWED = "ticket.renewed", _("Ticket renewed")
        TICKET_REVOKED = "ticket.revoked", _("Ticket revoked")
        ORDER_CANCELLED = "order.cancelled", _("Order cancelled")
        PING = "ping", _("Ping")

    id = models.CharField(
        primary_key=True, max_length=40, default=new_event_id, editable=False, verbose_name=_("id")
    )
    organizer = models.ForeignKey(
        Organizer,
        on_delete=models.CASCADE,
        related_name="webhook_events",
        verbose_name=_("organizer"),
    )
    type = models.CharField(max_length=32, choices=Type.choices, verbose_name=_("type"))
    # The body sent, exactly: {"id", "type", "created_at", "organizer_id", "event_id", "data"}.
    # `data` is None only in an event recorded by a change's statement (`source`), until its
    # dispatch renders it.
    payload = models.JSONField(encoder=DjangoJSONEncoder, verbose_name=_("payload"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))
    # The transactional outbox (`outbox`): None until a dispatcher has queued the event's
    # sending, in the transaction that marks it.
    dispatched_at = models.DateTimeField(
        null=True, blank=True, editable=False, verbose_name=_("dispatched at")
    )
    # An event recorded by a change's SQL statement: the rows it changed, from which the
    # renderer of its type (`renderers`) renders `data` (`outbox.webhook_events_complete`).
    source = models.JSONField(null=True, blank=True, editable=False, verbose_name=_("source"))

    class Meta:
        verbose_name = _("webhook event")
        verbose_name_plural = _("webhook events")
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
        PENDING = "pending", _("Pending")
        DELIVERED = "delivered", _("Delivered")
        FAILED = "failed", _("Failed")

    event = models.ForeignKey(
        WebhookEvent, on_delete=models.CASCADE, related_name="deliveries", verbose_name=_("event")
    )
    endpoint = models.ForeignKey(
        WebhookEndpoint,
        on_delete=models.CASCADE,
        related_name="deliveries",
        verbose_name=_("endpoint"),
    )
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.PENDING, verbose_name=_("status")
    )
    attempt_count = models.PositiveIntegerField(default=0, verbose_name=_("attempt count"))
    # Retries go on until this is WEBHOOK_RETRY_FOR_SECONDS old (creation, or a redelivery).
    pending_since = models.DateTimeField(default=timezone.now, verbose_name=_("pending since"))
    next_attempt_at = models.DateTimeField(null=True, blank=True, verbose_name=_("next attempt at"))
    delivered_at = models.DateTimeField(null=True, blank=True, verbose_name=_("delivered at"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("webhook delivery")
        ordering = ["-created_at", "-id"]
        verbose_name_plural = _("webhook deliveries")
        constraints = [
            models.UniqueConstraint(fields=["event", "endpoint"], name="webhook_delivery_unique")
        ]

    def __str__(self) -> str:
        return f"{self.event_id} → {self.endpoint_id}"


class WebhookAttempt(models.Model):
    """One POST: when, what came back (or why nothing did), how long it took."""

    delivery = models.ForeignKey(
        WebhookDelivery,
        on_delete=models.CASCADE,
        related_name="attempts",
        verbose_name=_("delivery"),
    )
    attempted_at = models.DateTimeField(verbose_name=_("attempted at"))
    status_code = models.PositiveSmallIntegerField(
        null=True, blank=True, verbose_name=_("status code")
    )
    duration_ms = models.PositiveIntegerField(verbose_name=_("duration ms"))
    error = models.CharField(max_length=500, blank=True, verbose_name=_("error"))
    # When the next attempt is due; None after a success or the last attempt.
    next_retry_at = models.DateTimeField(null=True, blank=True, verbose_name=_("next retry at"))

    class Meta:
        verbose_name = _("webhook attempt")
        verbose_name_plural = _("webhook attempts")
        ordering = ["attempted_at", "id"]

    def __str__(self) -> str:
        return f"{admin_date(self.attempted_at)} {self.status_code or self.error}"
