"""The gate's routes in the public API: check-in and renew (by id or scanned code), the
scanners' sync feed and batch upload, the live counts."""

from django.urls import path

from . import scanner_views, views

_EVENT = "organizers/<int:organizer_id>/events/<int:event_id>"

urlpatterns = [
    # The check-ins first (Django tries the routes in order); no two of these match one path.
    path(
        f"{_EVENT}/tickets/checkin",
        views.TicketScanCheckInView.as_view(),
        name="ticket-scan-checkin",
    ),
    path(
        f"{_EVENT}/tickets/<int:ticket_id>/checkin",
        views.TicketCheckInView.as_view(),
        name="ticket-checkin",
    ),
    path(f"{_EVENT}/checkins", scanner_views.CheckInBatchView.as_view(), name="checkin-batch"),
    path(f"{_EVENT}/tickets/sync", scanner_views.TicketSyncView.as_view(), name="ticket-sync"),
    path(
        f"{_EVENT}/tickets/renew",
        views.TicketScanRenewView.as_view(),
        name="ticket-scan-renew",
    ),
    path(
        f"{_EVENT}/tickets/<int:ticket_id>/renew",
        views.TicketRenewView.as_view(),
        name="ticket-renew",
    ),
    path(
        f"{_EVENT}/check_in_stats",
        scanner_views.CheckInStatsView.as_view(),
        name="check-in-stats",
    ),
]
