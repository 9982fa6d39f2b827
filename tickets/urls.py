"""The ticket routes: an event's tickets, the user's tickets and orders, search."""

from django.urls import path

from . import user_views, views

_EVENT = "organizers/<int:organizer_id>/events/<int:event_id>"

urlpatterns = [
    path(f"{_EVENT}/tickets", views.EventTicketsView.as_view(), name="event-tickets"),
    path(
        f"{_EVENT}/tickets/search",
        views.EventTicketSearchView.as_view(),
        name="event-ticket-search",
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
