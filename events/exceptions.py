"""Domain errors of events and ticket types. Only the admin and the commands change events, so
the API never answers with these codes (`listed=False`)."""

from ticketing.api.exceptions import Unprocessable


class CapacityBelowSold(Unprocessable, listed=False):
    """A quantity or API quota lower than the tickets that already hold a place.

    `fields` maps each offending setting to its message.
    """

    code = "capacity_below_sold"

    def __init__(self, fields: dict[str, list[str]]):
        super().__init__(next(iter(fields.values()))[0], fields=fields)
        self.fields = fields


class EventStatusConflict(Unprocessable, listed=False):
    code = "event_status_conflict"
