"""Parameters of the ticket and order lists (CONTRACT §6)."""

import re

from django import forms
from django.db.models import Q

from ticketing.api.filter_fields import JoinedText, int32_form_field
from ticketing.api.filtering import (
    ApiFilter,
    ApiFilterSet,
    CommaChoiceFilter,
    DateTimeFilter,
    Int32Filter,
    OrderByFilter,
    OrderFilter,
    QueryFilter,
    TextFilter,
)
from ticketing.api.schema_rules import SPACE

from .codes import reference_code_normalize
from .models import Order, Ticket

TICKET_STATUSES = tuple(Ticket.Status.values)

_NON_DIGITS = re.compile(r"\D+")


class PhoneDigitsField(forms.CharField):
    """Keeps the digits of what was typed: `081-234 5678` → `0812345678`."""

    def clean(self, value):
        value = super().clean(value)
        if not value:
            return None
        digits = _NON_DIGITS.sub("", value)
        if not digits:
            raise forms.ValidationError("Enter at least one digit.", code="invalid")
        return digits


class PhoneContainsFilter(ApiFilter):
    """Phones are stored in E.164 (`+66812345678`); a national number typed with its trunk
    `0` (`0812…`) also matches its international form, as the default region is TH.
    """

    field_class = PhoneDigitsField
    # A digit (and no NUL, as every text input); whitespace alone is no filter.
    param_schema = {
        "type": "string",
        "maxLength": 32,
        "pattern": rf"^[^\u0000]*\d[^\u0000]*$|^[{SPACE}]+$",
    }

    def __init__(self, **kwargs):
        super().__init__(field_name="phone", max_length=32, **kwargs)

    def filter(self, qs, value):
        if not value:
            return qs
        condition = Q(phone__contains=value)
        if value.startswith("0") and len(value) > 1:
            condition |= Q(phone__contains=f"66{value[1:]}")
        return qs.filter(condition)


# What a ticket's free-text `q` searches, in this order: its index (tickets 0007) holds them
# joined so.
TICKET_SEARCH_FIELDS = ("reference_code", "firstname", "lastname", "email")


def ticket_searched_text() -> JoinedText:
    """The text of `TICKET_SEARCH_FIELDS` as its trigram index holds it: the one index of a
    ticket's text, which every contains-search on these fields goes through."""
    return JoinedText(*TICKET_SEARCH_FIELDS)


def _ticket_query(*, search_fields, exact_extra=None) -> QueryFilter:
    exact_fields = {
        "id": int32_form_field(),
        "status": forms.ChoiceField(choices=Ticket.Status.choices),
        "kind": forms.ChoiceField(choices=Ticket.Kind.choices),
        "event_id": int32_form_field(),
        "order_id": int32_form_field(),
        "ticket_type_id": int32_form_field(),
        "reference_code": forms.CharField(max_length=64),
        "external_id": forms.CharField(max_length=64),
        **(exact_extra or {}),
    }
    return QueryFilter(
        search_fields=search_fields,
        joined_search=True,  # tickets.0007_ticket_search_index
        exact_fields=exact_fields,
        exact_q={"reference_code": lambda code: Q(reference_code=reference_code_normalize(code))},
    )


class EventTicketFilter(ApiFilterSet):
    status = CommaChoiceFilter(choices=TICKET_STATUSES, description="Comma-separated statuses.")
    ticket_type_id = Int32Filter(field_name="ticket_type_id", description="One ticket type.")
    email = TextFilter(
        field_name="email",
        lookup_expr="icontains",
        max_length=254,
        description="Holder email contains this (case-insensitive).",
        within=ticket_searched_text(),
    )
    phone = PhoneContainsFilter(description="Holder phone contains these digits.")
    updated_before = DateTimeFilter(
        field_name="updated_at", lookup_expr="lt", description="Updated strictly before (ISO 8601)."
    )
    updated_after = DateTimeFilter(
        field_name="updated_at", lookup_expr="gt", description="Updated strictly after (ISO 8601)."
    )
    max_id = Int32Filter(field_name="id", lookup_expr="lt", description="Tickets with id < max_id.")
    min_id = Int32Filter(
        field_name="id",
        lookup_expr="gt",
        min_value=0,
        description="Tickets with id > min_id (keyset pagination with order_by=id).",
    )
    q = _ticket_query(
        search_fields=TICKET_SEARCH_FIELDS, exact_extra={"nfc_uid": forms.CharField(max_length=64)}
    )
    order_by = OrderByFilter(fields=("id", "created_at", "updated_at", "used_at", "reference_code"))
    order = OrderFilter()


class UserTicketFilter(ApiFilterSet):
    q = _ticket_query(search_fields=TICKET_SEARCH_FIELDS)
    order_by = OrderByFilter(fields=("id", "created_at", "updated_at", "used_at"))
    order = OrderFilter()


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
