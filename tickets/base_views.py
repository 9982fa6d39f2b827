"""What the API's views share: the actor a request acts as, its validated body, and the
OpenAPI description of an error response."""

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

from events.selectors import event_get_for_organizer
from ticketing.api.caller import caller_of
from ticketing.api.exceptions import ApplicationError

from .services.common import Actor


def actor_of(request) -> Actor:
    caller = caller_of(request)
    return Actor(user=caller.user, application=caller.application)


def validated(serializer_class, request) -> dict:
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def validated_for_event(serializer_class, request, *, event_id: int) -> dict:
    """The body, for a service that finds the event itself: a missing event is still a 404
    before the body is looked at (CONTRACT §3, step 8)."""
    serializer = serializer_class(data=request.data)
    if not serializer.is_valid():
        event_get_for_organizer(organizer_id=request.organizer_id, event_id=event_id)
        raise serializers.ValidationError(serializer.errors)
    return serializer.validated_data


def error_response(description: str, errors: list[type[ApplicationError]]) -> OpenApiResponse:
    """An error response described here, its codes read from the errors that answer it; its body
    is the shared error component of its status (`ticketing.api.openapi`)."""
    codes = ", ".join(error.code for error in errors)
    return OpenApiResponse(description=f"{description} (`error`: {codes}).")
