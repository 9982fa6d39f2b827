from django.urls import path

from . import views

urlpatterns = [
    path(
        "organizers/<int:organizer_id>/events/<int:event_id>/tickets",
        views.EventTicketsView.as_view(),
        name="event-tickets",
    ),
    path(
        "organizers/<int:organizer_id>/events/<int:event_id>/tickets/search",
        views.EventTicketSearchView.as_view(),
        name="event-ticket-search",
    ),
    path(
        "organizers/<int:organizer_id>/tickets",
        views.UserTicketsView.as_view(),
        name="user-tickets",
    ),
    path("tickets/search", views.TicketSearchView.as_view(), name="ticket-search"),
]
