"""A list of ids in every encoding CONTRACT §1 accepts, as the gate's inputs take them."""

import json
import re

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.utils import html

from ticketing.api.fields import INT32_MAX, CopiedShallow

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
