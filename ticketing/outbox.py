"""The loop of a transactional outbox's relay: the apps' relays (webhook events, ticket emails)
each claim a batch of rows and hand them to tasks; this runs one beside a worker's tasks."""

import logging
import time
from collections.abc import Callable

from django.db import DatabaseError, close_old_connections

logger = logging.getLogger(__name__)


def relay_forever(
    relay: Callable[[], int], *, limit: int, poll_seconds: float, stop: Callable[[], bool]
) -> None:
    """Call `relay` (a pass handing over at most `limit` rows; how many it did) until `stop()`:
    at once again after a full pass, else after `poll_seconds`. A database that fails is tried
    again at the next pass."""
    while not stop():
        relayed = 0
        try:
            close_old_connections()
            relayed = relay()
        except DatabaseError as exc:
            logger.warning("%s failed (%s); retrying", relay.__name__, exc.__class__.__name__)
        if relayed < limit:
            time.sleep(poll_seconds)
