"""The gate's write endpoints. Creation shares the event tickets path, routed in tickets.urls."""

from django.urls import path

from .gate_views import TicketCheckInView, TicketInvalidateView, TicketRenewView

_EVENT = "organizers/<int:organizer_id>/events/<int:event_id>"

urlpatterns = [
    path(
        f"{_EVENT}/tickets/<int:ticket_id>/checkin",
        TicketCheckInView.as_view(),
        name="ticket-checkin",
    ),
    path(
        f"{_EVENT}/tickets/<int:ticket_id>/renew",
        TicketRenewView.as_view(),
        name="ticket-renew",
    ),
    path(
        f"{_EVENT}/tickets/invalidate",
        TicketInvalidateView.as_view(),
        name="ticket-invalidate",
    ),
]
