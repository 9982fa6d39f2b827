"""What the API's views share: the actor a request acts as, its validated body, and the
OpenAPI description of an error response."""

import threading

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
    """The body as `serializer_class` validates it, or its 400."""
    try:
        return _validator(serializer_class).run_validation(request.data)
    except serializers.ValidationError:
        return _validated_anew(serializer_class, request)


def validated_for_event(serializer_class, request, *, event_id: int) -> dict:
    """The body, for a service that finds the event itself: a missing event is still a 404
    before the body is looked at (CONTRACT §3, step 8)."""
    try:
        return _validator(serializer_class).run_validation(request.data)
    except serializers.ValidationError:
        event_get_for_organizer(organizer_id=request.organizer_id, event_id=event_id)
        return _validated_anew(serializer_class, request)


_validators = threading.local()


def _validator(serializer_class) -> serializers.Serializer:
    """One instance of `serializer_class` per thread, to validate every body it is given: a
    serializer made per request copies its declared fields, and validating (`run_validation`)
    keeps nothing on the instance."""
    kept = getattr(_validators, "by_class", None)
    if kept is None:
        kept = _validators.by_class = {}
    if serializer_class not in kept:
        kept[serializer_class] = serializer_class()
    return kept[serializer_class]


def _validated_anew(serializer_class, request) -> dict:
    """A body that failed, validated again by a serializer made for it: its 400 says what DRF's
    `is_valid` says (for a `null` body too, which `run_validation` words otherwise)."""
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data  # valid this time (a time limit passed meanwhile)


def error_response(description: str, errors: list[type[ApplicationError]]) -> OpenApiResponse:
    """An error response described here, its codes read from the errors that answer it; its body
    is the shared error component of its status (`ticketing.api.openapi`)."""
    codes = ", ".join(error.code for error in errors)
    return OpenApiResponse(description=f"{description} (`error`: {codes}).")
