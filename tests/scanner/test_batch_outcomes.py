"""Every outcome of an uploaded scan, in both modes: its result and its audit rows (CONTRACT §11).

A rejected scan of a known ticket leaves an audit row with the scan's id and its error code, so
staff see it; in multiple mode each requested type that failed leaves one, with its own code.
"""

from dataclasses import dataclass, field

import pytest

from checkin.models import CheckInLog, ScanRecord, TicketCheckIn
from tests.factories import CheckInTypeFactory, OrderFactory, TicketFactory, TicketTypeFactory
from tickets.models import Order, Ticket

from .helpers import batch_url

pytestmark = pytest.mark.django_db

AT = "2026-01-10T19:30:00+07:00"
EARLIER = "2026-01-10T18:00:00+07:00"


@dataclass
class Expected:
    success: bool
    error: str | None
    message: str  # with {ref} for the ticket's reference code
    status: str | None  # the ticket's status in the result, None when no ticket is known
    order_paid: bool | None = True
    # (check_in_type, success) of check_in_results / renew_results, names of the setup's types
    types: list[tuple[str, bool]] = field(default_factory=list)
    # (action, error, check_in_type) of the scan's audit rows, in the order written
    audit: list[tuple[str, str | None, str | None]] = field(default_factory=list)


class Setup:
    """An event in `mode` with one ticket in the state a case asks for."""

    def __init__(self, event, ticket_type, mode: str):
        self.event, self.mode = event, mode
        self.types = {}
        if mode == "multi":
            vip = TicketTypeFactory(event=event, name="VIP")
            self.types = {
                "day1": CheckInTypeFactory(event=event, name="Day 1"),
                "day2": CheckInTypeFactory(event=event, name="Day 2"),
                "vip": CheckInTypeFactory(event=event, name="VIP lounge"),
            }
            self.types["vip"].ticket_types.set([vip])
        self.ticket_type = ticket_type

    def ticket(self, *, status=Ticket.Status.ACTIVE, paid=True, checked_in=()) -> Ticket:
        order = OrderFactory(
            event=self.event, status=Order.Status.PAID if paid else Order.Status.PENDING
        )
        ticket = TicketFactory(
            event=self.event, ticket_type=self.ticket_type, order=order, status=status
        )
        for name in checked_in:
            TicketCheckIn.objects.create(
                ticket=ticket, check_in_type=self.types[name], used_at=ticket.used_at
            )
        return ticket

    def type_ids(self, names) -> list[int]:
        return [self.types[name].pk if name in self.types else 999_999 for name in names]


def _simple_cases():
    used = {"status": Ticket.Status.USED}
    return {
        "admitted": (
            {},
            {},
            Expected(
                True, None, "Ticket {ref} checked in.", "used", audit=[("check_in", None, None)]
            ),
        ),
        "already used": (
            used,
            {},
            Expected(
                False,
                "ticket_already_used",
                "Ticket {ref} was checked in at",
                "used",
                audit=[("check_in", "ticket_already_used", None)],
            ),
        ),
        "revoked": (
            {"status": Ticket.Status.REVOKED},
            {},
            Expected(
                False,
                "ticket_revoked",
                "Ticket {ref} has been revoked.",
                "revoked",
                audit=[("check_in", "ticket_revoked", None)],
            ),
        ),
        "unpaid": (
            {"paid": False},
            {},
            Expected(
                False,
                "order_not_paid",
                "The order of ticket {ref} is pending.",
                "active",
                order_paid=False,
                audit=[("check_in", "order_not_paid", None)],
            ),
        ),
        "renewed": (
            used,
            {"action": "renew"},
            Expected(True, None, "Ticket {ref} renewed.", "active", audit=[("renew", None, None)]),
        ),
        "renew not used": (
            {},
            {"action": "renew"},
            Expected(
                False,
                "ticket_not_used",
                "Ticket {ref} is not checked in.",
                "active",
                audit=[("renew", "ticket_not_used", None)],
            ),
        ),
    }


def _multi_cases():
    day1_used = {"status": Ticket.Status.USED, "checked_in": ["day1"]}
    return {
        "admitted": (
            {},
            {"types": ["day1"]},
            Expected(
                True,
                None,
                "Ticket {ref} checked in.",
                "used",
                types=[("day1", True)],
                audit=[("check_in", None, "day1")],
            ),
        ),
        "already used": (
            day1_used,
            {"types": ["day1"]},
            Expected(
                False,
                "ticket_already_used",
                "Ticket {ref}: no check-in type was checked in.",
                "used",
                types=[("day1", False)],
                audit=[("check_in", "ticket_already_used", "day1")],
            ),
        ),
        "already used and not valid": (
            day1_used,
            {"types": ["vip", "day1"]},
            Expected(
                False,
                "ticket_already_used",
                "Ticket {ref}: no check-in type was checked in.",
                "used",
                types=[("vip", False), ("day1", False)],
                audit=[
                    ("check_in", "invalid_parameters", "vip"),
                    ("check_in", "ticket_already_used", "day1"),
                ],
            ),
        ),
        "partly already used": (
            day1_used,
            {"types": ["day1", "day2"]},
            Expected(
                False,
                None,
                "Ticket {ref}: not every check-in type was checked in.",
                "used",
                types=[("day1", False), ("day2", True)],
                audit=[("check_in", None, "day2"), ("check_in", "ticket_already_used", "day1")],
            ),
        ),
        "not valid for the ticket type": (
            {},
            {"types": ["vip"]},
            Expected(
                False,
                "invalid_parameters",
                "Ticket {ref}: no check-in type was checked in.",
                "active",
                types=[("vip", False)],
                audit=[("check_in", "invalid_parameters", "vip")],
            ),
        ),
        "unknown check-in type": (
            {},
            {"types": ["nosuch"]},
            Expected(
                False,
                "invalid_parameters",
                "Ticket {ref}: no check-in type was checked in.",
                "active",
                types=[("nosuch", False)],
                audit=[("check_in", "invalid_parameters", None)],
            ),
        ),
        "no check-in type": (
            {},
            {},
            Expected(
                False,
                "check_in_type_required",
                "",
                "active",
                audit=[("check_in", "check_in_type_required", None)],
            ),
        ),
        "revoked": (
            {"status": Ticket.Status.REVOKED},
            {"types": ["day1"]},
            Expected(
                False,
                "ticket_revoked",
                "Ticket {ref} has been revoked.",
                "revoked",
                audit=[("check_in", "ticket_revoked", None)],
            ),
        ),
        "unpaid": (
            {"paid": False},
            {"types": ["day1"]},
            Expected(
                False,
                "order_not_paid",
                "The order of ticket {ref} is pending.",
                "active",
                order_paid=False,
                audit=[("check_in", "order_not_paid", None)],
            ),
        ),
        "renewed": (
            day1_used,
            {"action": "renew", "types": ["day1"]},
            Expected(
                True,
                None,
                "Ticket {ref} renewed.",
                "active",
                types=[("day1", True)],
                audit=[("renew", None, "day1")],
            ),
        ),
        "renew not used": (
            {},
            {"action": "renew", "types": ["day1"]},
            Expected(
                False,
                "ticket_not_used",
                "Ticket {ref} is not checked in.",
                "active",
                audit=[("renew", "ticket_not_used", None)],
            ),
        ),
        "renew of a type not checked in": (
            day1_used,
            {"action": "renew", "types": ["day2"]},
            Expected(
                False,
                "ticket_not_used",
                "Ticket {ref}: no check-in type was renewed.",
                "used",
                types=[("day2", False)],
                audit=[("renew", "ticket_not_used", "day2")],
            ),
        ),
        "renew partly not checked in": (
            day1_used,
            {"action": "renew", "types": ["day2", "day1"]},
            Expected(
                False,
                None,
                "Ticket {ref}: not every check-in type was renewed.",
                "active",
                types=[("day2", False), ("day1", True)],
                audit=[("renew", None, "day1"), ("renew", "ticket_not_used", "day2")],
            ),
        ),
        "renew of an unknown type": (
            day1_used,
            {"action": "renew", "types": ["nosuch"]},
            Expected(
                False,
                "invalid_parameters",
                "Ticket {ref}: no check-in type was renewed.",
                "used",
                types=[("nosuch", False)],
                audit=[("renew", "invalid_parameters", None)],
            ),
        ),
    }


def _unknown_ticket_cases(mode: str):
    types = {"types": ["day1"]} if mode == "multi" else {}
    return {
        "unknown code": (
            None,
            {"reference_code": "NOSUCH01", **types},
            Expected(False, "not_found", "Ticket not found.", None, order_paid=None),
        ),
        "invalid scan": (
            None,
            {"used_at": "yesterday", **types},
            Expected(False, "invalid_parameters", "This scan is malformed.", None, order_paid=None),
        ),
    }


CASES = [
    pytest.param(mode, setup, scan, expected, id=f"{mode}: {name}")
    for mode, cases in (
        ("simple", {**_simple_cases(), **_unknown_ticket_cases("simple")}),
        ("multi", {**_multi_cases(), **_unknown_ticket_cases("multi")}),
    )
    for name, (setup, scan, expected) in cases.items()
]


@pytest.mark.parametrize("mode, setup, scan_fields, expected", CASES)
def test_batch_scan_outcome_result_and_audit_rows(
    client, event, ticket_type, member, mode, setup, scan_fields, expected
):
    state = Setup(event, ticket_type, mode)
    ticket = state.ticket(**setup) if setup is not None else state.ticket()
    scan_fields = dict(scan_fields)
    body = {"id": "scan-outcome-1", "used_at": AT, "ticket_id": ticket.id}
    if "reference_code" in scan_fields:
        del body["ticket_id"]
    if "types" in scan_fields:
        body["check_in_type_ids"] = state.type_ids(scan_fields.pop("types"))
    body.update(scan_fields)

    response = client.post(batch_url(event), {"scans": [body]}, format="json")

    assert response.status_code == 200, response.json()
    result = response.json()["results"][0]
    assert (result["id"], result["success"], result["error"], result["replayed"]) == (
        "scan-outcome-1",
        expected.success,
        expected.error,
        False,
    )
    assert result["message"].startswith(expected.message.format(ref=ticket.reference_code))
    if expected.status is None:
        assert result["ticket"] is None
    else:
        assert (
            result["ticket"]["id"],
            result["ticket"]["status"],
            result["ticket"]["order_paid"],
        ) == (ticket.id, expected.status, expected.order_paid)
        assert result["ticket"]["status"] == Ticket.objects.get(pk=ticket.pk).status
    names = {t.pk: name for name, t in state.types.items()}
    type_results = result["check_in_results"] or result["renew_results"]
    assert [
        (names.get(r["check_in_type_id"], "nosuch"), r["success"]) for r in type_results
    ] == expected.types
    assert ScanRecord.objects.get().error == expected.error
    audit = CheckInLog.objects.order_by("pk").values_list(
        "scan_id", "ticket_id", "action", "error", "check_in_type_id", "actor_user_id"
    )
    assert list(audit) == [
        (
            "scan-outcome-1",
            ticket.id,
            action,
            error,
            state.types[type_name].pk if type_name else None,
            member.id,
        )
        for action, error, type_name in expected.audit
    ]
