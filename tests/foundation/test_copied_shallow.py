"""`CopiedShallow` fields: each serializer instance still gets fields of its own, which validate
exactly as the fields DRF copies by calling `__init__` again."""

import copy

import pytest
from rest_framework import serializers

from checkin.inputs import ScanCheckInInputSerializer
from ticketing.api.fields import IdListField, Int32Field, StrictCharField
from tickets.signed_codes import SIGNED_CODE_MAX_LENGTH


class _Declared(serializers.Serializer):
    code = StrictCharField(max_length=8)
    number = Int32Field(min_value=1, max_value=10, required=False)
    ids = IdListField(required=False)


class _AsDrfCopies(serializers.Serializer):
    """`_Declared`'s fields, copied the way DRF copies any field (`__init__` run again)."""

    def get_fields(self):
        declared = _Declared._declared_fields
        return {name: serializers.Field.__deepcopy__(f, {}) for name, f in declared.items()}


def test_each_serializer_binds_fields_of_its_own():
    first, second = _Declared(data={}), _Declared(data={})
    for name in ("code", "number", "ids"):
        assert first.fields[name] is not second.fields[name]
        assert first.fields[name] is not _Declared._declared_fields[name]
        assert first.fields[name].parent is first and second.fields[name].parent is second
        assert first.fields[name].field_name == name
    assert _Declared._declared_fields["code"].parent is None  # the declaration stays unbound


@pytest.mark.parametrize(
    "data",
    [
        {"code": "ABC", "number": "3", "ids": "1,2"},
        {"code": "ABCDEFGHIJ"},
        {"code": 12},
        {"code": "A\x00B"},
        {"code": "", "number": "11"},
        {"number": "x", "ids": "[1, -2]"},
        {},
    ],
)
def test_they_validate_as_fields_copied_by_drf(data):
    ours, drfs = _Declared(data=data), _AsDrfCopies(data=data)
    assert ours.is_valid() == drfs.is_valid()
    assert ours.errors == drfs.errors
    if not ours.errors:
        assert ours.validated_data == drfs.validated_data


def test_a_bound_field_is_copied_by_drf():
    bound = ScanCheckInInputSerializer(data={}).fields["reference_code"]
    copied = copy.deepcopy(bound)
    assert copied.parent is None and copied.field_name is None  # built anew from its arguments
    assert copied.max_length == SIGNED_CODE_MAX_LENGTH  # a printed code, or a QR's signed code
