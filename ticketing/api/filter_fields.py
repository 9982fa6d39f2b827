"""The form fields behind the list parameters (CONTRACT §6): int32 ids, ISO 8601 times, comma
lists and `q`, each refusing what it cannot read with a message naming the problem."""

import json
from collections.abc import Iterable
from datetime import UTC

from django import forms
from django.db.models import Func, TextField
from django_filters.fields import IsoDateTimeField

from .fields import INT32_MAX

# Search text is matched with LIKE; longer input cannot match any column we search.
MAX_SEARCH_LENGTH = 200


def int32_form_field(*, min_value: int = 1) -> forms.IntegerField:
    return forms.IntegerField(min_value=min_value, max_value=INT32_MAX)


class ApiDateTimeField(IsoDateTimeField):
    """ISO 8601 with an offset or `Z`; a naive time is read in the site zone (CONTRACT §1).

    Times that cannot be expressed in UTC (year 9999 with a negative offset) are a 400 here
    rather than an overflow in the database adapter.
    """

    def clean(self, value):
        value = super().clean(value)
        if value is None:
            return None
        try:
            value.astimezone(UTC)
        except OverflowError:
            raise forms.ValidationError("This time is out of range.", code="invalid") from None
        return value


class CommaChoiceField(forms.Field):
    """`active,used` → `["active", "used"]`; every item must be one of `choices`."""

    def __init__(self, *, choices: Iterable[str], **kwargs):
        self.valid_choices = tuple(choices)
        super().__init__(**kwargs)

    def clean(self, value):
        value = super().clean(value)
        if value in (None, ""):
            return None
        items = [item.strip() for item in str(value).split(",")]
        if any(not item for item in items):
            raise forms.ValidationError("Empty item in the comma-separated list.", code="invalid")
        unknown = [item for item in items if item not in self.valid_choices]
        if unknown:
            raise forms.ValidationError(
                f"Unknown value '{unknown[0]}'. Allowed: {', '.join(self.valid_choices)}.",
                code="invalid_choice",
            )
        return list(dict.fromkeys(items))


class SearchText(str):
    """A `q` that is plain text: a contains-search, not exact filters."""


class JoinedText(Func):
    """Text columns joined by a unit separator (chr 31), searched as one: a contains-search
    over several columns is then one LIKE per row, and one trigram index can answer it.

    Built from `||`, which is immutable (Django's `Concat` is `CONCAT()`, which is not), so
    PostgreSQL can index the expression; the columns must not be NULL.
    """

    arg_joiner = " || chr(31) || "
    template = "(%(expressions)s)"
    output_field = TextField()

    def as_sqlite(self, compiler, connection, **extra_context):
        return self.as_sql(compiler, connection, arg_joiner=" || char(31) || ", **extra_context)


class QueryField(forms.CharField):
    """Parses `q`: a JSON object of exact filters, or search text (CONTRACT §6)."""

    def __init__(self, *, exact_fields: dict[str, forms.Field], **kwargs):
        kwargs.setdefault("max_length", MAX_SEARCH_LENGTH)
        self.exact_fields = exact_fields
        super().__init__(**kwargs)

    def clean(self, value):
        text = super().clean(value)
        if not text:
            return None
        if not text.startswith("{"):
            return SearchText(text)
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            raise forms.ValidationError("Not a valid JSON object.", code="invalid") from None
        if not isinstance(data, dict):
            raise forms.ValidationError("Not a valid JSON object.", code="invalid")
        allowed = ", ".join(self.exact_fields)
        cleaned = {}
        for key, raw in data.items():
            field = self.exact_fields.get(key)
            if field is None:
                raise forms.ValidationError(
                    f"Unknown filter key '{key}'. Allowed: {allowed}.", code="invalid"
                )
            if raw is None or isinstance(raw, bool | dict | list | float):
                raise forms.ValidationError(
                    f"Filter '{key}' takes a single string or integer.", code="invalid"
                )
            try:
                cleaned[key] = field.clean(str(raw))
            except forms.ValidationError as exc:
                raise forms.ValidationError(
                    f"Filter '{key}': {exc.messages[0]}", code="invalid"
                ) from None
        return cleaned
