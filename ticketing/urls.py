from django.contrib import admin
from django.urls import include, path

from ticketing.health import healthz

urlpatterns = [
    # Django tries the routes in order: the API, most of the traffic, first (no other route
    # starts with its prefix).
    path("api/public/", include("ticketing.api.urls")),
    path("healthz", healthz, name="healthz"),
    # Prometheus metrics for operators, behind METRICS_TOKEN (off without it).
    path("metrics", include("checkin.metrics")),
    # /oauth/*, /.well-known/oauth-authorization-server, and the admin's sign-in page.
    path("", include("oauth_setup.urls")),
    # The event dashboard (checkin.dashboard_views), ahead of the admin's catch-all.
    path("admin/events/event/", include("checkin.dashboard_views")),
    path("admin/", admin.site.urls),
    # The attendee's ticket page (CONTRACT §14), addressed by its token.
    path("t/", include("tickets.page_urls")),
    # The staff check-in page (CONTRACT §15), a client of the public API.
    path("checkin/", include("checkin.page_urls")),
]

handler400 = "ticketing.api.exception_handler.bad_request"
handler404 = "ticketing.api.exception_handler.not_found"
handler500 = "ticketing.api.exception_handler.server_error"
