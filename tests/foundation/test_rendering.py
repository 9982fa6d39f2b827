"""`ticketing.api.rendering`: a serializer with `DirectRepresentation` renders exactly what DRF's
own walk of its declared fields renders, every field of it, with the context where a field
needs it. Each resource has its parity test beside its endpoints (organizers, tickets, the
gate's answer, the scanner's ticket); these hold the mechanism itself."""

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest
from rest_framework import serializers
from rest_framework.test import APIRequestFactory

from ticketing.api.fields import AbsoluteImageField, BlankAsNullCharField, Int32Field
from ticketing.api.rendering import DirectRepresentation, representation_steps


class Line(serializers.Serializer):
    label = serializers.CharField(source="field.label")
    value = serializers.CharField()


class Thing(DirectRepresentation, serializers.Serializer):
    id = Int32Field()
    name = BlankAsNullCharField()
    at = serializers.DateTimeField(allow_null=True)
    kind = serializers.ChoiceField(choices=[("a", "A"), ("b", "B")])
    owner_name = serializers.CharField(source="owner.name")
    lines = Line(many=True)
    shout = serializers.SerializerMethodField()
    picture = AbsoluteImageField("picture")
    secret = serializers.CharField(write_only=True)

    def get_shout(self, thing) -> str:
        name = thing["name"] if isinstance(thing, dict) else thing.name
        return name.upper()


class Rows(list):
    """A related manager's stand-in: rows come from `.all()`."""

    def all(self):
        return list(self)


def _thing(**overrides):
    values = {
        "id": 7,
        "name": "lamp",
        "at": datetime(2026, 11, 27, 1, 2, 3, tzinfo=UTC),
        "kind": "b",
        "owner": SimpleNamespace(name="Somchai"),
        "lines": Rows([SimpleNamespace(field=SimpleNamespace(label="Size"), value="L")]),
        "picture": SimpleNamespace(url="/media/lamp.png"),
        "secret": "never shown",
    }
    return SimpleNamespace(**{**values, **overrides})


def _drf(serializer, instance) -> dict:
    return dict(serializers.Serializer.to_representation(serializer, instance))


@pytest.mark.parametrize(
    "thing",
    [
        _thing(),
        _thing(name="", at=None, lines=Rows(), picture=None),
        _thing(lines=[SimpleNamespace(field=SimpleNamespace(label="Q"), value="<b>")]),
    ],
)
@pytest.mark.parametrize("with_request", [False, True])
def test_direct_output_is_drfs_walk_of_the_declared_fields(thing, with_request):
    request = APIRequestFactory().get("/x") if with_request else None
    context = {"request": request} if request else {}
    direct = Thing(context=context).to_representation(thing)
    assert direct == _drf(Thing(context=context), thing)
    assert list(direct) == [name for name in Thing().fields if name != "secret"]
    if thing.picture:
        expected = "http://testserver/media/lamp.png" if with_request else "/media/lamp.png"
        assert direct["picture"] == expected


def test_many_renders_each_directly():
    things = [_thing(id=1), _thing(id=2, name="")]
    assert Thing(things, many=True).data == [_drf(Thing(), t) for t in things]


def test_a_mapping_is_read_by_its_keys():
    thing = vars(_thing())
    assert Thing().to_representation(thing) == _drf(Thing(), thing)
    with pytest.raises(AttributeError):
        Thing().to_representation({"id": 1})


def test_the_steps_are_built_once_per_class():
    assert representation_steps(Thing) is representation_steps(Thing)
    assert [step[0] for step in representation_steps(Thing)] == [
        "id",
        "name",
        "at",
        "kind",
        "owner_name",
        "lines",
        "shout",
        "picture",
    ]


def test_represent_renders_as_a_context_free_serializer_made_for_the_call(monkeypatch):
    thing = _thing()
    expected = _drf(Thing(), thing)
    Thing.represent(_thing(id=1))  # the class's kept serializer exists from here on
    made = []
    monkeypatch.setattr(Thing, "__init__", lambda *a, **k: made.append(a))

    assert Thing.represent(thing) == expected
    assert Thing.represent(_thing(name="", lines=Rows())) == {
        **expected,
        "name": None,
        "shout": "",
        "lines": [],
    }
    assert made == []
