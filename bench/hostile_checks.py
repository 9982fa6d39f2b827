"""Schemathesis hooks for `bench/hostile.py` (loaded through `SCHEMATHESIS_HOOKS`).

Every check runs on every operation; this drops exactly six kinds of failure, about what a
schema can say or a request carry, not about the API:
- ST202 (`positive_data_acceptance`), a check-in or renew refused with a 400 naming only a
  `used_at` more than 5 minutes ahead: CONTRACT §7's bound moves with the clock;
- ST201 (`negative_data_rejection`), an array or scalar body sent as a form: a form carries
  only fields, so an empty form (or one unknown field) arrives, a valid request;
- ST202 on the sync feed, a 400 naming only `cursor`: a cursor is valid only if this service
  signed it for this event (CONTRACT §11);
- ST202 on a batch upload, a 400 naming only scan ids that repeat: CONTRACT §11 refuses it
  whole, and a schema cannot require distinct values of one property;
- ST202 on an event's ticket search, a 400 naming only its keys when the query does not hold
  exactly one of `reference_code`, `nfc_uid`, `ticket_id`: OpenAPI cannot relate query
  parameters, so their descriptions say it (CONTRACT §6);
- ST201 on a batch upload of the right shape where a scan failed: CONTRACT §11 fails a scan
  wrong on its own (no `used_at`, two keys...) alone, in a 200, and replays a scan id applied.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import schemathesis
from schemathesis.core.failures import AcceptedNegativeData
from schemathesis.openapi.checks import RejectedPositiveData

CLOCK_BOUND_PATHS = (
    "/api/public/organizers/{organizer_id}/events/{event_id}/tickets/{ticket_id}/checkin",
    "/api/public/organizers/{organizer_id}/events/{event_id}/tickets/{ticket_id}/renew",
    "/api/public/organizers/{organizer_id}/events/{event_id}/tickets/checkin",
    "/api/public/organizers/{organizer_id}/events/{event_id}/tickets/renew",
)
USED_AT_MAX_AHEAD = timedelta(minutes=5)
SYNC_PATH = "/api/public/organizers/{organizer_id}/events/{event_id}/tickets/sync"
BATCH_PATH = "/api/public/organizers/{organizer_id}/events/{event_id}/checkins"
SEARCH_PATH = "/api/public/organizers/{organizer_id}/events/{event_id}/tickets/search"
SEARCH_KEYS = {"reference_code", "nfc_uid", "ticket_id"}
FORM_MEDIA_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


@schemathesis.hook
def filter_failure(context, failure, case, response) -> bool:
    """False drops the failure."""
    if isinstance(failure, RejectedPositiveData):
        return not (
            refused_only_for_a_future_used_at(case, response)
            or refused_only_for_an_unissued_cursor(case, response)
            or refused_only_for_a_repeated_scan_id(case, response)
            or refused_only_for_not_one_search_key(case, response)
        )
    if isinstance(failure, AcceptedNegativeData):
        return not (non_object_sent_as_a_form(case) or a_scan_failed_alone(case, response))
    return True


def _json(response):
    try:
        return response.json()
    except ValueError:
        return None


def refused_only_for_an_unissued_cursor(case, response) -> bool:
    body = _json(response)
    return (
        case.operation.path == SYNC_PATH
        and response.status_code == 400
        and isinstance(body, dict)
        and set(body.get("fields") or {}) == {"cursor"}
    )


def refused_only_for_not_one_search_key(case, response) -> bool:
    body, query = _json(response), case.query or {}
    if case.operation.path != SEARCH_PATH or response.status_code != 400:
        return False
    fields = set(body.get("fields") or {}) if isinstance(body, dict) else set()
    return bool(fields) and fields <= SEARCH_KEYS and len(SEARCH_KEYS & set(query)) != 1


def refused_only_for_a_repeated_scan_id(case, response) -> bool:
    body, sent = _json(response), case.body
    if case.operation.path != BATCH_PATH or response.status_code != 400:
        return False
    if not isinstance(body, dict) or not isinstance(sent, dict):
        return False
    fields = set(body.get("fields") or {})
    scans = sent.get("scans")
    if not fields or not all(f.startswith("scans.") and f.endswith(".id") for f in fields):
        return False
    ids = [s.get("id") for s in scans if isinstance(s, dict)] if isinstance(scans, list) else []
    return len(ids) != len(set(map(str, ids)))


def a_scan_failed_alone(case, response) -> bool:
    body, sent = _json(response), case.body
    if case.operation.path != BATCH_PATH or response.status_code != 200:
        return False
    if not isinstance(body, dict) or not isinstance(sent, dict):
        return False
    scans, results = sent.get("scans"), body.get("results")
    return (
        isinstance(scans, list)
        and isinstance(results, list)
        and len(scans) == len(results)
        and any(isinstance(r, dict) and r.get("success") is False for r in results)
    )


def refused_only_for_a_future_used_at(case, response) -> bool:
    if case.operation.path not in CLOCK_BOUND_PATHS or response.status_code != 400:
        return False
    try:
        fields = set(response.json().get("fields", {}))
    except (ValueError, AttributeError):
        return False
    body = case.body  # the generated object, before JSON or form encoding
    if fields != {"used_at"} or not isinstance(body, dict):
        return False
    if not isinstance(body.get("used_at"), str):
        return False
    try:
        sent = datetime.fromisoformat(body["used_at"].upper())
    except ValueError:
        return False
    if sent.tzinfo is None:
        return False  # RFC 3339 times carry an offset; anything else is not this case
    try:
        return sent.astimezone(UTC) > datetime.now(UTC) + USED_AT_MAX_AHEAD
    except OverflowError:
        return sent.year >= 9999  # beyond what UTC can express: in the future


def non_object_sent_as_a_form(case) -> bool:
    media_type = (case.media_type or "").split(";")[0].strip()
    return media_type in FORM_MEDIA_TYPES and not isinstance(case.body, dict)
