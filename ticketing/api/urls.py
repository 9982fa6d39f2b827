"""Every route of the public API, under `{base_url}` = /api/public (CONTRACT §1).

Each app mounts its own routes, the gate's first: Django tries them in order, and a scan is
the call to answer soonest (no two apps' routes match the same path). The last route answers
every other path with the contract's 404, whatever DEBUG is: a plain Django view, which the
OpenAPI document (DRF views only) leaves out.
"""

from django.urls import include, path, re_path

from .exception_handler import unknown_route

urlpatterns = [
    path("", include("checkin.urls")),
    path("", include("tickets.urls")),
    path("", include("events.urls")),
    path("", include("organizers.urls")),
    path("", include("accounts.urls")),
    path("", include("webhooks.urls")),
    path("", include("ticketing.api.schema_urls")),
    re_path(r"^.*$", unknown_route, name="api-unknown-route"),
]
