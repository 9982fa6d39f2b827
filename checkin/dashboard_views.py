"""The event dashboard's page in the admin (`/admin/events/event/<id>/dashboard/`), mounted by the
root URLconf ahead of the admin's own URLs: the events app, whose admin links here by URL name,
cannot import the tickets app that reads the figures."""

from django.contrib import admin
from django.http import Http404
from django.shortcuts import get_object_or_404, render
from django.urls import path, reverse
from django.utils.translation import gettext as _

from events.models import Event
from organizers.admin_scoping import member_organizer_ids

from .dashboard import event_dashboard


def event_dashboard_page(request, event_id: int):
    event = get_object_or_404(Event.objects.select_related("organizer"), pk=event_id)
    if not request.user.is_superuser and event.organizer_id not in member_organizer_ids(request):
        raise Http404  # as the admin answers for an object outside the user's organizers
    dashboard = event_dashboard(event=event)
    context = {
        **admin.site.each_context(request),
        "title": _("Dashboard: %(event)s") % {"event": event.title},
        "dashboard": dashboard,
        "event": event,
        "event_url": reverse("admin:events_event_change", args=[event.pk]),
    }
    return render(request, "admin/tickets/event_dashboard.html", context)


urlpatterns = [
    path(
        "<int:event_id>/dashboard/",
        admin.site.admin_view(event_dashboard_page),
        name="event-dashboard",
    )
]
