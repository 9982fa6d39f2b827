"""Every route of the public API, under `{base_url}` = /api/public (CONTRACT §1).

Each app mounts its own routes; the tickets app splits the gate's write endpoints (check-in,
renew, invalidate, creation) from its reads.
"""

from django.urls import include, path

urlpatterns = [
    path("", include("accounts.urls")),
    path("", include("organizers.urls")),
    path("", include("events.urls")),
    path("", include("tickets.urls")),
    path("", include("tickets.gate_urls")),
    path("", include("orders.urls")),
    path("", include("ticketing.api.schema_urls")),
]
