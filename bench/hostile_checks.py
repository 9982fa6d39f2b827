"""Schemathesis hooks for `bench/hostile.py` (loaded through `SCHEMATHESIS_HOOKS`).

Every check runs on every operation; this drops exactly two kinds of failure, which are about
what a schema can say or what a request can carry, not about the API:

- `positive_data_acceptance` (ST202) on a check-in or renew refused with a 400 naming only
  `used_at`, when the `used_at` sent is more than 5 minutes ahead of now. CONTRACT §7 allows a
  scanner's clock at most 5 minutes ahead; the document states every other rule of those
  bodies (the lower bound too, as a pattern), but no schema can state a bound that moves
  with the clock.
- `negative_data_rejection` (ST201) for a body generated as an array or a scalar and sent as
  a form: a form can only carry fields, so what reaches the server is an empty form (or one
  unknown field), which is a valid request. Schemathesis makes this allowance for object
  bodies only.
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
FORM_MEDIA_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


@schemathesis.hook
def filter_failure(context, failure, case, response) -> bool:
    """False drops the failure."""
    if isinstance(failure, RejectedPositiveData):
        return not refused_only_for_a_future_used_at(case, response)
    if isinstance(failure, AcceptedNegativeData):
        return not non_object_sent_as_a_form(case)
    return True


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
