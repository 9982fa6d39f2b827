"""Parameters of `GET /organizers` (CONTRACT §6)."""

from django import forms

from ticketing.api.filter_fields import int32_form_field
from ticketing.api.filtering import (
    ApiFilterSet,
    OrderByFilter,
    OrderFilter,
    QueryFilter,
)

from .models import Membership


class OrganizerFilter(ApiFilterSet):
    q = QueryFilter(
        search_fields=("name", "slug"),
        exact_fields={
            "id": int32_form_field(),
            "slug": forms.SlugField(max_length=80),
            "role": forms.ChoiceField(choices=Membership.Role.choices),
        },
    )
    order_by = OrderByFilter(fields=("id", "name", "created_at", "updated_at"))
    order = OrderFilter()
