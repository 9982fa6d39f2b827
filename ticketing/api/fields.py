"""Serializer fields for the contract's rules of values (CONTRACT §1), in and out."""

import copy
import datetime
import json
import re

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.utils import html

# Every integer of this API (ids, satangs, counts, pages) is an int32: PostgreSQL's `integer`.
INT32_MAX = 2**31 - 1


@extend_schema_field({"type": "string", "nullable": True})
class BlankAsNullCharField(serializers.CharField):
    """A value that was never set is `null`, not `""`."""

    def to_representation(self, value):
        return value if value not in (None, "") else None


@extend_schema_field({"type": "string", "format": "uri", "nullable": True})
class AbsoluteImageField(serializers.Field):
    """An image's absolute URL, or `null`. `source` may name several fields, first one set wins.

    Renditions fall back to the upload until the resized copy exists.
    """

    def __init__(self, *fields: str, **kwargs):
        self.image_fields = fields
        kwargs.setdefault("read_only", True)
        kwargs["source"] = "*"
        super().__init__(**kwargs)

    def to_representation(self, instance):
        return self.to_representation_in(instance, self.context)

    def to_representation_in(self, instance, context: dict):
        """The URL, absolute when the context has the request (`rendering`)."""
        for name in self.image_fields:
            image = getattr(instance, name, None)
            if image:
                request = context.get("request")
                return request.build_absolute_uri(image.url) if request else image.url
        return None


class CopiedShallow:
    """A field that a serializer copies shallowly. DRF deep-copies every declared field for each
    serializer instance by calling its `__init__` again (validators and messages built anew):
    about 10 µs a field, a third of validating a gate's scan. A declared field is never bound
    itself, so a shallow copy of it is as fresh, and `bind()` sets the copy's own attributes;
    DRF already treats validators as immutable when it copies (encode/django-rest-framework#1954).
    """

    def __deepcopy__(self, memo):
        if self.parent is not None:  # a bound field: DRF's own copy
            return super().__deepcopy__(memo)
        return copy.copy(self)


@extend_schema_field(OpenApiTypes.INT32)
class Int32Field(CopiedShallow, serializers.IntegerField):
    pass


class OriginalImageSerializer(serializers.Serializer):
    def __init__(self, image_field: str, **kwargs):
        self.image_field = image_field
        super().__init__(source="*", read_only=True, **kwargs)

    original = serializers.SerializerMethodField()

    @extend_schema_field({"type": "string", "format": "uri", "nullable": True})
    def get_original(self, instance):
        image = getattr(instance, self.image_field)
        if not image:
            return None
        request = self.context.get("request")
        return request.build_absolute_uri(image.url) if request else image.url


@extend_schema_field({"type": "boolean", "enum": [True]})
class SuccessField(serializers.Field):
    """`"success": true` of every success body; required in the schema."""

    def __init__(self, **kwargs):
        kwargs.update(source="*", read_only=True)
        super().__init__(**kwargs)

    def to_representation(self, value) -> bool:
        return True


class StrictCharField(CopiedShallow, serializers.CharField):
    """Text input that must arrive as text: a JSON number or boolean is a 400, not coerced."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


def datetime_representation(value: datetime.datetime | None) -> str | None:
    """What `serializers.DateTimeField` renders (ISO 8601 in the current time zone, UTC as `Z`;
    None stays None), for serializers that build their dict by hand: a page of tickets renders
    200 of them, and DRF's field asks its settings and the time zone anew for each."""
    if value is None:
        return None
    text = value.astimezone(timezone.get_current_timezone()).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def iso(value: datetime.datetime) -> str:
    """A time in the gate's messages: ISO 8601, local, to the second."""
    return timezone.localtime(value).isoformat(timespec="seconds")


def satangs_to_decimal_string(satangs: int) -> str:
    """Money as the spec shows it (satangs everywhere, CONTRACT §1): 150000 → "1500.00"."""
    sign = "-" if satangs < 0 else ""
    baht, satang = divmod(abs(satangs), 100)
    return f"{sign}{baht}.{satang:02d}"


def format_baht(satangs: int) -> str:
    """Money as a label for people: 150000 → "฿1,500.00"."""
    baht, satang = divmod(satangs, 100)
    return f"฿{baht:,}.{satang:02d}"


class DateTimeOutputField(CopiedShallow, serializers.DateTimeField):
    """DRF's `DateTimeField`, rendered by `datetime_representation` (the same text, without
    asking the settings and the time zone anew for each value)."""

    def to_representation(self, value):
        return datetime_representation(value)


_ID_TEXT = re.compile(r"^\s*[+-]?\d{1,20}\s*$")


@extend_schema_field(
    {
        "type": "array",
        "items": {"type": "integer", "format": "int32", "minimum": 1, "maximum": INT32_MAX},
        "description": 'A JSON array, repeated keys, `key[]=`, `"1,2"` or `"[1,2]"`.',
    }
)
class IdListField(CopiedShallow, serializers.Field):
    """A list of int32 ids in every encoding CONTRACT §1 accepts.

    JSON array (`[1, 2]`), repeated form keys (`ids=1&ids=2`), Rails-style `ids[]=1`, one
    comma-separated string (`"1,2"`) or a string holding a JSON array (`"[1,2]"`). Order and
    repeats are kept: results follow the request.
    """

    default_error_messages = {
        "invalid": 'Expected a list of ids: [1, 2], "1,2" or repeated keys.',
        "range": f"Ids are whole numbers from 1 to {INT32_MAX}.",
        "too_many": "At most {max_items} ids.",
    }

    def __init__(self, *, max_items: int = 100, **kwargs):
        self.max_items = max_items
        super().__init__(**kwargs)

    def get_value(self, dictionary):
        if html.is_html_input(dictionary):
            values = [
                *dictionary.getlist(self.field_name),
                *dictionary.getlist(f"{self.field_name}[]"),
            ]
            return values or empty
        return dictionary.get(self.field_name, empty)

    def to_internal_value(self, data) -> list[int]:
        ids = self._flatten(data, nested=False)
        if len(ids) > self.max_items:
            self.fail("too_many", max_items=self.max_items)
        return ids

    def to_representation(self, value):
        return list(value)

    def _flatten(self, data, *, nested: bool) -> list[int]:
        if isinstance(data, str):
            text = data.strip()
            if text.startswith("["):
                try:
                    parsed = json.loads(text)
                except ValueError:
                    self.fail("invalid")
                if not isinstance(parsed, list):
                    self.fail("invalid")
                return [self._id(item) for item in parsed]
            return [self._id(part) for part in text.split(",") if part.strip()]
        if isinstance(data, list) and not nested:
            # Repeated form values may each be "1,2" or "[1,2]"; JSON elements are plain ids.
            return [i for item in data for i in self._flatten_item(item)]
        if isinstance(data, int) and not isinstance(data, bool) and not nested:
            return [self._id(data)]
        self.fail("invalid")

    def _flatten_item(self, item) -> list[int]:
        if isinstance(item, str):
            return self._flatten(item, nested=True)
        return [self._id(item)]

    def _id(self, value) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif isinstance(value, str) and _ID_TEXT.match(value):
            number = int(value)
        else:
            self.fail("invalid")
        if not 1 <= number <= INT32_MAX:
            self.fail("range")
        return number
