"""The gate's write endpoints: ticket creation, check-in, renew, invalidate."""


class TicketCreateMixin:
    """`POST .../events/{e}/tickets`, mixed into the event tickets list view (same path)."""
