"""A serializer's output from its declared fields, walked once per class instead of per call.

DRF builds a serializer's fields anew for every serializer instance (a deep copy of each
declared field; a ModelSerializer's from its model too), then reads each field of each object
through the generic `get_attribute`. On the hottest answers (a ticket at the gate, a page of
tickets, a scanner's sync page) that costs more than the rest of the request. A serializer with
`DirectRepresentation` builds its fields once, on a template instance, and keeps for each
readable field how to read its value and the field's own `to_representation`: the output is
DRF's by construction, from the same field objects, and every resource is rendered by this one
mechanism. tests/foundation/test_rendering.py holds each resource to DRF's own walk.

A field whose output depends on the request (an absolute URL) declares
`to_representation_in(value, context)`; it gets the calling serializer's context.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from operator import attrgetter
from typing import Any

from rest_framework import serializers

Step = tuple[str, Callable[[Any], Any] | None, Callable[..., Any], bool]


class DirectRepresentation:
    """Mixin for a read-only serializer: `to_representation` from its declared fields, as DRF
    renders them, walked once per class (the fields must not depend on the instance's context
    but through `to_representation_in`)."""

    @classmethod
    def represent(cls, instance) -> dict:
        """`to_representation` without a serializer made for the call (a context-free one, kept
        per class: rendering reads the class's steps and keeps nothing on the instance)."""
        return _template(cls).to_representation(instance)

    def to_representation(self, instance) -> dict:
        output = {}
        context = None
        attributes = _Keys(instance) if isinstance(instance, Mapping) else instance
        for name, read, render, contextual in representation_steps(type(self)):
            value = instance if read is None else read(attributes)
            if value is None:
                output[name] = None
            elif contextual:
                if context is None:
                    context = self.context
                output[name] = render(value, context)
            else:
                output[name] = render(value)
        return output


@functools.cache
def _template(serializer_class: type[serializers.Serializer]) -> serializers.Serializer:
    return serializer_class()


@functools.cache
def representation_steps(serializer_class: type[serializers.Serializer]) -> tuple[Step, ...]:
    """For each readable field of `serializer_class`: its name, how to read its value from an
    instance, how to render it, and whether rendering takes the context."""
    return tuple(
        _step(name, field)
        for name, field in _template(serializer_class).fields.items()
        if not field.write_only
    )


def _step(name: str, field: serializers.Field) -> Step:
    read = _reader(field)
    if hasattr(field, "to_representation_in"):
        return name, read, field.to_representation_in, True
    if isinstance(field, serializers.ListSerializer):
        render_one = field.child.to_representation
        return name, read, lambda rows: [render_one(row) for row in rows], False
    return (
        name,
        read,
        _SAME_OUTPUT.get(type(field).to_representation, field.to_representation),
        False,
    )


# Fields whose `to_representation` is exactly a builtin's call: the builtin, one call less.
_SAME_OUTPUT = {
    serializers.CharField.to_representation: str,
    serializers.IntegerField.to_representation: int,
}


def _reader(field: serializers.Field) -> Callable[[Any], Any] | None:
    """How to read the value DRF's `Field.get_attribute` reads: the dotted source (keys of a
    mapping), a related manager's rows for a list; None for `source="*"`, the instance itself.
    (A source naming a method, which DRF would call, is not read so: parity tests show it.)"""
    if field.source == "*":
        return None
    read = attrgetter(".".join(field.source_attrs))
    if isinstance(field, serializers.ListSerializer):
        return lambda instance: _rows(read(instance))
    return read


def _rows(value):
    return value.all() if hasattr(value, "all") else value


class _Keys:
    """A mapping read as attributes, as DRF's `get_attribute` reads a dict's keys."""

    __slots__ = ("mapping",)

    def __init__(self, mapping: Mapping):
        self.mapping = mapping

    def __getattr__(self, name: str):
        try:
            return self.mapping[name]
        except KeyError:
            raise AttributeError(name) from None
