"""What the sync feed needs of a replica before it may answer (`ticketing.db_routing`)."""

from ticketing.api.exceptions import InvalidParameters

from .selectors_scanner import sync_cursor_load


def sync_cursor_xid(request, view_kwargs) -> int:
    """The transaction id the cursor's position stands at: a replica whose oldest running
    transaction is older would hand back this cursor, or one behind it, instead of the changes
    the primary has already passed on. 0 for a walk's first page or a cursor the view refuses."""
    cursor = request.GET.get("cursor")
    if not cursor or "event_id" not in view_kwargs:
        return 0
    try:
        return sync_cursor_load(event_id=view_kwargs["event_id"], cursor=cursor).xid
    except InvalidParameters:
        return 0
