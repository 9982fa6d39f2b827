"""Cases for `devtools.statements`: the load generator's COPY against `bulk_create`, on rows
made as the command makes them (orders, then tickets of existing orders)."""

import copy
import random

from devtools.management.commands.generate_load_data import Command
from tests.factories import EventFactory, OrderFactory, TicketTypeFactory
from tickets.models import Order, Ticket

from .support import Case


class _Counted:
    def __init__(self):
        self.done = 0

    def advance(self, n: int) -> None:
        self.done += n


# `bulk_create` stamps these with the time of its save (`auto_now`), COPY writes the rows' own
# time (the command's "now"): both a time of the load, not earlier than the rows were made.
_STAMPED = ("created_at", "updated_at")


def _case(label: str, model, rows: list[dict], key: str) -> Case:
    """Both write `rows` (a fresh copy each): the same rows stored, but for their ids and the
    sync feed's sequence, each row given the id it was stored under, all of them counted."""
    last = {}
    made = {name: min(row[name] for row in rows) for name in _STAMPED}

    def stored_as_compared(row: dict) -> dict:
        row = {k: v for k, v in row.items() if k not in {"id", "change_seq"}}
        return row | {name: row[name] >= made[name] for name in _STAMPED}

    def arguments():
        last["rows"], last["progress"] = copy.deepcopy(rows), _Counted()
        return {"model": model, "rows": last["rows"], "progress": last["progress"]}

    def state():
        event_id = rows[0]["event_id"]
        stored = list(model.objects.filter(event_id=event_id).order_by(key).values())
        by_id = {row["id"]: row[key] for row in stored}
        return (
            [stored_as_compared(row) for row in stored],
            [by_id.get(row["id"]) == row[key] for row in last["rows"]],
            last["progress"].done,
        )

    return Case(label=label, arguments=arguments, state=state)


def _cases() -> list[Case]:
    event = EventFactory()
    ticket_types = TicketTypeFactory.create_batch(2, event=event, quantity=100)
    orders, tickets = Command()._rows(
        event, ticket_types, 7, 3, used_pct=30, revoked_pct=20, rng=random.Random(7)
    )
    stored_orders = OrderFactory.create_batch(len(orders), event=event)
    for ticket in tickets:
        ticket["order_id"] = stored_orders[orders.index(ticket.pop("order"))].pk
    other = EventFactory()
    new_orders, _ = Command()._rows(
        other, ticket_types, 5, 1, used_pct=0, revoked_pct=0, rng=random.Random(8)
    )
    return [
        _case("orders", Order, new_orders, "buyer_email"),
        _case(
            "tickets of existing orders, some used or revoked", Ticket, tickets, "reference_code"
        ),
    ]


CASES = {"devtools.statements.rows_copy": _cases}
