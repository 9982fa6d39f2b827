"""Parameters of the user's orders list (CONTRACT §6)."""

from django import forms

from ticketing.api.filtering import (
    ApiFilterSet,
    OrderByFilter,
    OrderFilter,
    QueryFilter,
    int32_form_field,
)

from .models import Order


class UserOrderFilter(ApiFilterSet):
    q = QueryFilter(
        search_fields=("buyer_firstname", "buyer_lastname", "buyer_email"),
        exact_fields={
            "id": int32_form_field(),
            "event_id": int32_form_field(),
            "status": forms.ChoiceField(choices=Order.Status.choices),
            "kind": forms.ChoiceField(choices=Order.Kind.choices),
        },
    )
    order_by = OrderByFilter(fields=("id", "created_at", "paid_at", "updated_at"))
    order = OrderFilter()
