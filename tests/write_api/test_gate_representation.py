"""`GateResultSerializer` and `TypeResultSerializer` build their dicts by hand (every scan
answers with them); they must equal what their declared fields produce."""

from datetime import UTC, datetime, timedelta, timezone

import pytest
from rest_framework import serializers

from checkin.gate_types import GateResult, TypeResult
from checkin.serializers import GateResultSerializer, TypeResultSerializer
from tests.factories import TicketFactory
from tickets.serializers import TicketSerializer

pytestmark = pytest.mark.django_db

BANGKOK = timezone(timedelta(hours=7))


def _field_driven(serializer_class, instance) -> dict:
    """What DRF renders from the declared fields, without the hand-built shortcut."""
    return serializers.Serializer.to_representation(serializer_class(), instance)


def _results() -> list[TypeResult]:
    at = datetime(2026, 11, 26, 9, 30, 15, 123456, tzinfo=UTC)
    return [
        TypeResult(7, "Main gate", at, True, None),
        TypeResult(8, "VIP lounge", at.astimezone(BANGKOK), False, "Already checked in at ..."),
        TypeResult(9, None, None, False, "Unknown check-in type"),
    ]


def test_hand_built_type_result_equals_the_declared_fields():
    for result in _results():
        built = TypeResultSerializer().to_representation(result)
        assert built == dict(_field_driven(TypeResultSerializer, result))
    assert TypeResultSerializer().to_representation(_results()[1])["used_at"] == (
        "2026-11-26T16:30:15.123456+07:00"
    )


@pytest.mark.parametrize("split", [0, 1, 3])
def test_hand_built_gate_result_equals_the_declared_fields(event, ticket_type, split):
    ticket = TicketFactory(event=event, ticket_type=ticket_type, status="used")
    ticket.form_answer_list = []
    results = _results()
    gate = GateResult(ticket, check_in_results=results[:split], renew_results=results[split:])
    built = GateResultSerializer().to_representation(gate)
    declared = _field_driven(GateResultSerializer, gate)
    assert built == {
        "success": declared["success"],
        "ticket": dict(declared["ticket"]),
        "check_in_results": [dict(r) for r in declared["check_in_results"]],
        "renew_results": [dict(r) for r in declared["renew_results"]],
    }
    assert built["success"] is False  # a type failed
    assert built["ticket"] == TicketSerializer().to_representation(ticket)


def test_a_simple_mode_result_has_empty_lists_and_succeeds(event, ticket_type):
    ticket = TicketFactory(event=event, ticket_type=ticket_type, status="used")
    ticket.form_answer_list = []
    gate = GateResult(ticket=ticket, check_in_results=[], renew_results=[])
    built = GateResultSerializer().to_representation(gate)
    assert built == {**_field_driven(GateResultSerializer, gate), "ticket": built["ticket"]}
    assert (built["success"], built["check_in_results"], built["renew_results"]) == (True, [], [])
