"""The API's routes plus the bench-only floor endpoints (see `devtools.bench_floor`)."""

from django.db import connection
from django.urls import path
from django.utils import timezone
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from checkin.services.admission import admitted_ticket
from ticketing.urls import urlpatterns as api_urlpatterns
from tickets.gate_types import TicketKey
from tickets.services.common import Actor


class _Bare(APIView):
    authentication_classes = []
    permission_classes = [AllowAny]
    throttle_classes = []


class SelectOne(_Bare):
    def post(self, request, organizer_id: int, event_id: int, ticket_id: int):
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return Response({"success": True})


class AdmitOnly(_Bare):
    def post(self, request, organizer_id: int, event_id: int, ticket_id: int):
        ticket = admitted_ticket(
            organizer_id=organizer_id,
            event_id=event_id,
            key=TicketKey.id(ticket_id),
            actor=Actor(),
            at=timezone.now(),
            note="",
        )
        return Response({"success": ticket is not None})


_TICKET = "<int:organizer_id>/<int:event_id>/<int:ticket_id>"
urlpatterns = [
    *api_urlpatterns,
    path(f"bench-floor/select-one/{_TICKET}", SelectOne.as_view()),
    path(f"bench-floor/admit/{_TICKET}", AdmitOnly.as_view()),
]
