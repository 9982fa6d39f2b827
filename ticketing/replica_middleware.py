"""Marks each request's reads for the primary or a replica (`ticketing.db_routing`).

Installed, last, only when DATABASE_REPLICA_URLS is set. A replica that fails while answering
(stopped after it was checked) costs the request a second run on the primary, not an error:
the routes it serves only read.
"""

from __future__ import annotations

from django.conf import settings
from django.utils.module_loading import import_string

from . import db_routing


class ReplicaReadMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response
        self.requirements = {
            name: import_string(path)
            for name, path in settings.DATABASE_REPLICA_REQUIREMENTS.items()
        }

    def __call__(self, request):
        request.read_from = None
        response = self._respond(request)
        if request.read_from is not None and response.status_code >= 500:
            db_routing.mark_down(request.read_from)
            request.replica_failed = True
            request.read_from = None
            response = self._respond(request)
        if request.method not in db_routing.SAFE_METHODS and response.status_code < 400:
            db_routing.remember_write(request)
        if settings.DATABASE_ROUTE_HEADER:
            response["X-Database-Route"] = request.read_from or "primary"
        return response

    def process_view(self, request, view_func, view_args, view_kwargs):
        match = request.resolver_match
        if (
            request.method not in db_routing.SAFE_METHODS
            or match.view_name not in db_routing.REPLICA_ROUTES
            or getattr(request, "replica_failed", False)
        ):
            return None
        need_lsn = db_routing.caller_lsn(request)
        if need_lsn is None:
            return None
        requirement = self.requirements.get(match.view_name)
        need_xid = requirement(request, view_kwargs) if requirement else 0
        alias = db_routing.choose_replica(need_lsn=need_lsn, need_xid=need_xid)
        if alias is not None:
            request.read_from = alias
            request.read_token = db_routing.reading_from(alias)
        return None

    def _respond(self, request):
        request.read_token = None
        try:
            return self.get_response(request)
        finally:
            if request.read_token is not None:
                db_routing.stop_reading(request.read_token)
