"""The ticket routes: an event's tickets and the gate, the user's tickets and orders, search."""

from django.urls import path

from . import scanner_views, user_views, views

_EVENT = "organizers/<int:organizer_id>/events/<int:event_id>"

urlpatterns = [
    path(f"{_EVENT}/tickets", views.EventTicketsView.as_view(), name="event-tickets"),
    path(
        f"{_EVENT}/tickets/search",
        views.EventTicketSearchView.as_view(),
        name="event-ticket-search",
    ),
    # Before `tickets/<int:ticket_id>/...` by habit; an id never matches these words anyway.
    path(
        f"{_EVENT}/tickets/checkin",
        views.TicketScanCheckInView.as_view(),
        name="ticket-scan-checkin",
    ),
    path(
        f"{_EVENT}/tickets/renew",
        views.TicketScanRenewView.as_view(),
        name="ticket-scan-renew",
    ),
    path(f"{_EVENT}/tickets/sync", scanner_views.TicketSyncView.as_view(), name="ticket-sync"),
    path(f"{_EVENT}/checkins", scanner_views.CheckInBatchView.as_view(), name="checkin-batch"),
    path(
        f"{_EVENT}/check_in_stats",
        scanner_views.CheckInStatsView.as_view(),
        name="check-in-stats",
    ),
    path(
        f"{_EVENT}/tickets/<int:ticket_id>/checkin",
        views.TicketCheckInView.as_view(),
        name="ticket-checkin",
    ),
    path(
        f"{_EVENT}/tickets/<int:ticket_id>/renew",
        views.TicketRenewView.as_view(),
        name="ticket-renew",
    ),
    path(
        f"{_EVENT}/tickets/invalidate",
        views.TicketInvalidateView.as_view(),
        name="ticket-invalidate",
    ),
    path(
        "organizers/<int:organizer_id>/tickets",
        user_views.UserTicketsView.as_view(),
        name="user-tickets",
    ),
    path(
        "organizers/<int:organizer_id>/orders",
        user_views.UserOrdersView.as_view(),
        name="user-orders",
    ),
    path("tickets/search", user_views.TicketSearchView.as_view(), name="ticket-search"),
]
