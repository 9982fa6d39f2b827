"""The scanner apps' endpoints: the sync feed, the batch upload (CONTRACT §11) and the live
check-in counts (CONTRACT §12). Callers are those of check-in (§3).
"""

from django.conf import settings
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from events.selectors import event_get_for_organizer
from organizers.permissions import CheckInResource
from ticketing.api.exceptions import InvalidParameters
from ticketing.api.throttling import charge_request, upload_slots
from tickets.base_views import actor_of
from tickets.keys import SEARCH_KEYS, TicketKey

from .inputs import CheckInBatchInputSerializer, SyncParams
from .selectors_scanner import FeedPosition, event_tickets_sync, sync_cursor_load
from .serializers import (
    CheckInBatchResultSerializer,
    CheckInStatsSerializer,
    ScannerTicketSerializer,
    SyncPageSerializer,
)
from .services.batch import scans_apply
from .services.batch_chunk import Scan
from .stats import event_check_in_stats

# An upload's slot frees itself this long after it was taken should its worker die holding it:
# far longer than an upload runs (a second or so; gunicorn stops a request after 30 s).
_UPLOAD_SLOT_SECONDS = 120
_UPLOAD_RETRY_AFTER = 2

_NOT_FOUND = OpenApiResponse(description="Organizer or event not found (`error`: not_found).")


def _invalid(what: str) -> OpenApiResponse:
    return OpenApiResponse(description=f"{what} (`error`: {InvalidParameters.code}).")


class TicketSyncView(APIView):
    """`GET .../events/{e}/tickets/sync`: the event's tickets in change order, by cursor."""

    permission_classes = [CheckInResource]

    @extend_schema(
        tags=["scanner"],
        summary="Sync an event's tickets to a scanner",
        description=(
            "Tickets in the order they last changed. Follow `next_cursor` until `has_more` is "
            "false to get every ticket; call again later with the last `next_cursor` to get "
            "exactly the tickets changed since (revoked ones included, so the scanner drops "
            "them). No change is ever skipped; a ticket may come again. Every page also lists "
            "the event's signing keys (`keys`), which verify the signed codes of its tickets' "
            "QR codes, also of tickets sold after the last sync (see *Signed ticket codes*)."
        ),
        parameters=[SyncParams],
        responses={
            200: SyncPageSerializer,
            400: _invalid("Bad `limit`, or a cursor not issued for this event"),
            404: _NOT_FOUND,
        },
    )
    def get(self, request, organizer_id: int, event_id: int):
        event = event_get_for_organizer(organizer_id=request.organizer_id, event_id=event_id)
        params = SyncParams(data=request.query_params)
        params.is_valid(raise_exception=True)
        cursor = params.validated_data.get("cursor")
        after = sync_cursor_load(event_id=event.pk, cursor=cursor) if cursor else FeedPosition()
        page = event_tickets_sync(
            event_id=event.pk, after=after, limit=params.validated_data["limit"]
        )
        render = ScannerTicketSerializer().to_representation
        return Response(
            {
                "success": True,
                "tickets": [render(row) for row in page.tickets],
                "next_cursor": page.next_cursor,
                "has_more": page.has_more,
                "keys": page.keys,
            }
        )


class CheckInBatchView(APIView):
    """`POST .../events/{e}/checkins`: the scans a scanner queued offline."""

    permission_classes = [CheckInResource]

    @extend_schema(
        tags=["scanner"],
        summary="Upload a scanner's queued scans",
        description=(
            "1 to 500 scans, each applied alone in request order with the rules of one "
            "check-in or renew; one result per scan. A scan id already applied in this event "
            "returns its first result with `replayed: true` and changes nothing. A malformed "
            "upload (not a JSON object, no scans, more than 500, a scan without a valid or "
            "with a repeated `id`) is refused whole; any other fault fails its scan alone "
            "with `error: invalid_parameters`.\n\n"
            "**Limits.** Each scan counts as one request against your rate limit (a 500-scan "
            "upload spends 500 of the minute's budget, replayed scans included). An upload "
            "larger than what remains of the budget is refused whole: 429 `rate_limited`, "
            "nothing applied; send it again after `Retry-After` seconds, or in smaller parts. "
            f"At most {settings.BATCH_UPLOADS_PER_ORGANIZER} uploads of one organizer are "
            "processed at a time, and a server processes only a few uploads at a time whoever "
            "sends them; one more is refused the same way (429 `rate_limited` with "
            "`Retry-After`, nothing applied). A refused upload may be sent again as it was: "
            "its scans were not applied."
        ),
        request={"application/json": CheckInBatchInputSerializer},
        responses={
            200: CheckInBatchResultSerializer,
            400: _invalid("A malformed upload: nothing was applied"),
            404: _NOT_FOUND,
        },
    )
    def post(self, request, organizer_id: int, event_id: int):
        event = event_get_for_organizer(organizer_id=request.organizer_id, event_id=event_id)
        upload = CheckInBatchInputSerializer(data=request.data)
        upload.is_valid(raise_exception=True)
        scans = [_scan(scan, event) for scan in upload.validated_data["scans"]]
        # Refused before any work (CONTRACT §9): the slot first, so a refused upload spends
        # no scans of the budget.
        with upload_slots(
            request.organizer_id, seconds=_UPLOAD_SLOT_SECONDS, retry_after=_UPLOAD_RETRY_AFTER
        ):
            charge_request(request, len(scans))
            outcomes = scans_apply(
                organizer_id=request.organizer_id, event=event, scans=scans, actor=actor_of(request)
            )
        results = [{**outcome.result, "replayed": outcome.replayed} for outcome in outcomes]
        return Response(
            {"success": all(result["success"] for result in results), "results": results}
        )


def _scan(parsed: dict, event) -> Scan:
    if parsed["errors"] is not None:
        return Scan(id=parsed["id"], invalid=parsed["errors"])
    data = parsed["data"]
    data.pop("id")
    keys = {name: data.pop(name) for name in SEARCH_KEYS if name in data}
    key = TicketKey.of(organizer_id=event.organizer_id, event_id=event.pk, **keys)
    return Scan(id=parsed["id"], action=data.pop("action"), key=key, inputs=data)


class CheckInStatsView(APIView):
    """`GET .../events/{e}/check_in_stats`: the door manager's live counts."""

    permission_classes = [CheckInResource]

    @extend_schema(
        tags=["scanner"],
        summary="Live check-in counts of an event",
        description=(
            "Tickets by status, per ticket type and check-in type, and successful check-ins "
            "per quarter hour (site time zone) from the first to the last, empty ones "
            "included. Exact at `generated_at`."
        ),
        responses={200: CheckInStatsSerializer, 404: _NOT_FOUND},
    )
    def get(self, request, organizer_id: int, event_id: int):
        event = event_get_for_organizer(organizer_id=request.organizer_id, event_id=event_id)
        return Response(CheckInStatsSerializer(event_check_in_stats(event=event)).data)
