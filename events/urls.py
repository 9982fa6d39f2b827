from django.urls import path

from . import views

urlpatterns = [
    path(
        "organizers/<int:organizer_id>/events",
        views.OrganizerEventsView.as_view(),
        name="organizer-events",
    ),
    path(
        "organizers/<int:organizer_id>/events/<int:event_id>",
        views.EventDetailView.as_view(),
        name="event-detail",
    ),
    path(
        "organizers/<int:organizer_id>/events/<int:event_id>/check_in_types",
        views.EventCheckInTypesView.as_view(),
        name="event-check-in-types",
    ),
]
