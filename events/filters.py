"""Parameters of `GET /organizers/{o}/events` (CONTRACT §6)."""

from django import forms

from ticketing.api.filter_fields import int32_form_field
from ticketing.api.filtering import (
    ApiFilterSet,
    CommaChoiceFilter,
    OrderByFilter,
    OrderFilter,
    QueryFilter,
)

from .models import Event
from .selectors import event_status_q

EVENT_STATUSES = tuple(Event.Status.values)


class EventFilter(ApiFilterSet):
    status = CommaChoiceFilter(
        choices=EVENT_STATUSES,
        to_q=event_status_q,
        description="Comma-separated statuses, as shown (an active event that is over is ended).",
    )
    q = QueryFilter(
        search_fields=("title", "location_name"),
        exact_fields={
            "id": int32_form_field(),
            "status": forms.ChoiceField(choices=Event.Status.choices),
            "title": forms.CharField(max_length=255),
            "location_name": forms.CharField(max_length=255),
        },
        exact_q={"status": lambda status: event_status_q([status])},
    )
    order_by = OrderByFilter(fields=("id", "created_at", "updated_at", "start_at", "end_at"))
    order = OrderFilter()
