"""Webhook endpoints of an organizer through the API (CONTRACT §13)."""

from django.conf import settings
from django_ratelimit.core import get_usage
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from organizers.permissions import OrganizerManagerUserResource
from ticketing.api.exceptions import RateLimited

from .models import WebhookEndpoint
from .selectors import webhook_endpoint_get, webhook_endpoints_for_organizer
from .serializers import (
    EVENT_TYPE_CHOICES,
    SuccessResponseSerializer,
    WebhookCreatedResponseSerializer,
    WebhookEndpointSerializer,
)
from .services import webhook_endpoint_create, webhook_endpoint_delete, webhook_endpoint_ping

_FORBIDDEN = OpenApiResponse(
    description="Not a user token with scope organizer of an owner or admin (`error`: "
    "user_token_required, insufficient_scope, application_not_owned, not_organizer_member)."
)


@extend_schema(tags=["Webhooks"])
class WebhooksView(generics.ListAPIView):
    """GET lists the organizer's endpoints; POST registers one."""

    permission_classes = [OrganizerManagerUserResource]
    serializer_class = WebhookEndpointSerializer
    items_key = "webhooks"
    queryset = WebhookEndpoint.objects.none()  # the model, for the schema

    class InputSerializer(serializers.Serializer):
        url = serializers.CharField(
            max_length=2000,
            # Untrimmed: whitespace anywhere, the ends too, is refused by the URL check.
            trim_whitespace=False,
            help_text="https, not a private, loopback or link-local address (after DNS), "
            "without whitespace or control characters.",
        )
        event_types = serializers.ListField(
            child=serializers.ChoiceField(EVENT_TYPE_CHOICES),
            allow_empty=False,
            max_length=len(EVENT_TYPE_CHOICES),
            help_text='Event types to receive, or `["*"]` for all.',
        )

        def validate_event_types(self, value: list[str]) -> list[str]:
            if "*" in value and len(set(value)) > 1:
                raise serializers.ValidationError('"*" stands alone: it means every type.')
            return value

    def get_queryset(self):
        return webhook_endpoints_for_organizer(organizer_id=self.request.organizer_id)

    @extend_schema(
        summary="List the organizer's webhook endpoints",
        responses={200: WebhookEndpointSerializer(many=True), 403: _FORBIDDEN},
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        summary="Register a webhook endpoint",
        description="The response carries the signing secret (`whsec_...`), shown only here. "
        "Deliveries are signed as Standard Webhooks.",
        request=InputSerializer,
        responses={
            201: WebhookCreatedResponseSerializer,
            400: OpenApiResponse(
                description="A malformed body, a URL that is refused, or an organizer that has "
                "as many endpoints as it may (20 by default): nothing is created."
            ),
            403: _FORBIDDEN,
        },
    )
    def post(self, request, organizer_id: int):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        endpoint, secret = webhook_endpoint_create(
            organizer_id=request.organizer_id, **data.validated_data
        )
        endpoint.secret = secret
        return Response(
            WebhookCreatedResponseSerializer({"webhook": endpoint}).data,
            status=status.HTTP_201_CREATED,
        )


@extend_schema(tags=["Webhooks"])
class WebhookView(APIView):
    permission_classes = [OrganizerManagerUserResource]

    @extend_schema(
        summary="Delete a webhook endpoint",
        description="Its pending deliveries are dropped.",
        responses={200: SuccessResponseSerializer, 403: _FORBIDDEN},
    )
    def delete(self, request, organizer_id: int, webhook_id: int):
        endpoint = webhook_endpoint_get(organizer_id=request.organizer_id, endpoint_id=webhook_id)
        webhook_endpoint_delete(endpoint_id=endpoint.pk)
        return Response(SuccessResponseSerializer({}).data)


@extend_schema(tags=["Webhooks"])
class WebhookTestView(APIView):
    permission_classes = [OrganizerManagerUserResource]

    @extend_schema(
        summary="Send a ping to a webhook endpoint",
        description="A `ping` event is delivered to this endpoint (in the background, retried "
        "like any event). At most 5 a minute per endpoint by default.",
        request=None,
        responses={
            200: SuccessResponseSerializer,
            403: _FORBIDDEN,
            429: OpenApiResponse(
                description="`rate_limited`: too many pings of this endpoint; see `Retry-After`."
            ),
        },
    )
    def post(self, request, organizer_id: int, webhook_id: int):
        endpoint = webhook_endpoint_get(organizer_id=request.organizer_id, endpoint_id=webhook_id)
        _ping_count(request, endpoint_id=endpoint.pk)
        webhook_endpoint_ping(endpoint=endpoint)
        return Response(SuccessResponseSerializer({}).data)


def _ping_count(request, *, endpoint_id: int) -> None:
    """Count a ping of the endpoint; past WEBHOOK_TEST_RATE_LIMIT of them, refuse it: each may
    cost a worker a whole timeout, which the organizers sharing it wait out.

    Raises: RateLimited.
    """
    usage = get_usage(
        request,
        group="webhook-test",
        key=lambda group, request: f"webhook-endpoint:{endpoint_id}",
        rate=settings.WEBHOOK_TEST_RATE_LIMIT,
        increment=True,
    )
    if usage is not None and usage["should_limit"]:
        raise RateLimited(usage["time_left"])
