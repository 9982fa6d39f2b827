from rest_framework import serializers

from ticketing.api.fields import Int32Field, SuccessField

from .models import WebhookEndpoint, WebhookEvent

# What an endpoint may subscribe to (CONTRACT §13), `ping` included: only `/test` sends one.
EVENT_TYPE_CHOICES = ["*", *WebhookEvent.Type.values]


class WebhookEndpointSerializer(serializers.ModelSerializer):
    """A URL of the organizer's that receives the webhook event types it subscribes to."""

    id = Int32Field()
    event_types = serializers.ListField(child=serializers.ChoiceField(EVENT_TYPE_CHOICES))

    class Meta:
        model = WebhookEndpoint
        fields = ["id", "url", "event_types", "is_active", "created_at", "updated_at"]
        read_only_fields = fields


class WebhookEndpointWithSecretSerializer(WebhookEndpointSerializer):
    """A webhook endpoint just registered, with the secret that signs its deliveries."""

    secret = serializers.CharField(help_text="`whsec_<base64>`: shown only in this response.")

    class Meta(WebhookEndpointSerializer.Meta):
        fields = [*WebhookEndpointSerializer.Meta.fields, "secret"]
        read_only_fields = fields


class WebhookCreatedResponseSerializer(serializers.Serializer):
    success = SuccessField()
    webhook = WebhookEndpointWithSecretSerializer()


class SuccessResponseSerializer(serializers.Serializer):
    success = SuccessField()
