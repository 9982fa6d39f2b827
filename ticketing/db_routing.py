"""Which database a request reads from: the primary, or a read replica that is fresh enough.

With DATABASE_REPLICA_URLS set, the GET endpoints named in `REPLICA_ROUTES` (lists, search, the
sync feed, stats, exports, the ticket page) read from a hot standby; everything else, and every
write, uses the primary (`default`). A replica serves a request only if, checked at most
DATABASE_REPLICA_CHECK_SECONDS ago (and once more at once when the request needs more):
- it is in recovery and streaming from the primary (a promoted or cut-off one is not a replica),
  and its replay lags by at most DATABASE_REPLICA_MAX_LAG_SECONDS;
- it has replayed the caller's last write (read-your-writes, by WAL position: `caller_lsn`);
- it has replayed what the request's own requirement names (the sync feed: its cursor's
  position, `DATABASE_REPLICA_REQUIREMENTS`).
Otherwise, or when it does not answer (skipped for DATABASE_REPLICA_RETRY_SECONDS), the primary
serves the request. Accounts, memberships and OAuth tokens are always read from the primary: a
revoked token or role must not outlive its revocation on a lagging replica.
"""

from __future__ import annotations

import hashlib
import logging
import random
import time
from contextvars import ContextVar
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import caches
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections

from .proxies import client_address
from .statements import replica_state_row, wal_position

# URL names whose GET (and HEAD) may be answered from a replica's snapshot.
REPLICA_ROUTES = frozenset(
    {
        "organizer-events",
        "event-detail",
        "event-check-in-types",
        "event-tickets",  # the list and its CSV export (its POST creates: primary)
        "event-ticket-search",
        "ticket-search",
        "ticket-sync",
        "check-in-stats",
        "user-tickets",
        "user-orders",
        "ticket-page",
        "ticket-page-qr-svg",
        "ticket-page-qr-png",
    }
)
# Apps whose rows decide who may do what: read where they are written.
PRIMARY_APPS = frozenset(
    {"oauth2_provider", "oauth_setup", "accounts", "organizers", "auth", "sessions"}
)
SAFE_METHODS = frozenset({"GET", "HEAD"})

_read_alias: ContextVar[str | None] = ContextVar("read_alias", default=None)
logger = logging.getLogger(__name__)

# The privilege `statements.replica_state_row` needs to see whether a replica streams.
REPLICA_GRANT = "GRANT pg_read_all_stats TO <the app's role>"


class ReplicaRouter:
    """Reads of the current request go where `ReplicaReadMiddleware` chose; writes to the
    primary. Inside a transaction on the primary, reads stay there with the writes."""

    def db_for_read(self, model, **hints):
        alias = _read_alias.get()
        if alias is None or model._meta.app_label in PRIMARY_APPS:
            return DEFAULT_DB_ALIAS
        if connections[DEFAULT_DB_ALIAS].in_atomic_block:
            return DEFAULT_DB_ALIAS
        return alias

    def db_for_write(self, model, **hints):
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1, obj2, **hints):
        return True  # the same data: a replica's rows are the primary's

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        return db == DEFAULT_DB_ALIAS


def replica_aliases() -> list[str]:
    return [alias for alias in settings.DATABASES if alias != DEFAULT_DB_ALIAS]


def reading_from(alias: str | None):
    """Route this context's reads to `alias` (None: the primary); returns the reset token."""
    return _read_alias.set(alias)


def stop_reading(token) -> None:
    _read_alias.reset(token)


# --- The replicas' state, checked per process -------------------------------------------------


@dataclass(frozen=True)
class ReplicaState:
    usable: bool  # in recovery, streaming, not lagging past the bound
    answered: bool  # False: not reachable (asked again after the retry pause)
    replay_lsn: int  # bytes of WAL replayed
    horizon: int  # the oldest transaction still running there (its snapshot's xmin)
    checked_at: float
    privileged: bool = True  # False: the role cannot see whether it streams (REPLICA_GRANT)

    @property
    def health(self) -> str:
        """For `/healthz`: why this replica serves no reads, or "ok"."""
        if not self.answered:
            return "unavailable"
        if not self.privileged:
            return f"not used: the role lacks pg_read_all_stats ({REPLICA_GRANT})"
        return "ok" if self.usable else "lagging or not streaming"


_states: dict[str, ReplicaState] = {}


def replica_state(alias: str, *, max_age: float) -> ReplicaState:
    """The replica's state, asked again when older than `max_age` seconds."""
    now = time.monotonic()
    state = _states.get(alias)
    if state is not None and (now - state.checked_at <= max_age or not _may_retry(state, now)):
        return state
    try:
        row = replica_state_row(alias)
    except DatabaseError:
        connections[alias].close()
        state = ReplicaState(False, False, 0, 0, now)
    else:
        lagging = float(row["lag"]) > settings.DATABASE_REPLICA_MAX_LAG_SECONDS
        state = ReplicaState(
            usable=bool(row["streaming"]) and not lagging,
            answered=True,
            replay_lsn=row["replay_lsn"] or 0,
            horizon=row["horizon"] or 0,
            checked_at=now,
            privileged=row["privileged"],
        )
        previous = _states.get(alias)
        if not state.privileged and (previous is None or previous.privileged):
            logger.error("replica %s is never used: %s", alias, state.health)
    _states[alias] = state
    return state


def replicas_health() -> dict[str, str]:
    """Each replica's state for `/healthz`, asked now."""
    return {alias: replica_state(alias, max_age=0).health for alias in replica_aliases()}


def _may_retry(state: ReplicaState, now: float) -> bool:
    """A replica that did not answer is asked again only after the retry pause."""
    return state.answered or now - state.checked_at >= settings.DATABASE_REPLICA_RETRY_SECONDS


def mark_down(alias: str) -> None:
    connections[alias].close()
    _states[alias] = ReplicaState(False, False, 0, 0, time.monotonic())


def choose_replica(*, need_lsn: int = 0, need_xid: int = 0) -> str | None:
    """A replica that is usable and has replayed up to both needs, else None (the primary)."""
    aliases = replica_aliases()
    random.shuffle(aliases)  # spread the readers over the replicas
    for alias in aliases:
        state = replica_state(alias, max_age=settings.DATABASE_REPLICA_CHECK_SECONDS)
        if state.usable and not _serves(state, need_lsn, need_xid):
            state = replica_state(alias, max_age=0)  # behind when last asked: ask once more
        if state.usable and _serves(state, need_lsn, need_xid):
            return alias
    return None


def _serves(state: ReplicaState, need_lsn: int, need_xid: int) -> bool:
    return state.replay_lsn >= need_lsn and state.horizon >= need_xid


# --- Read-your-writes ----------------------------------------------------------------------------


def caller_key(request) -> str:
    """Who is asking: their bearer token, else their session, else their address (hashed)."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    identity = (
        header
        or request.GET.get("access_token", "")
        or request.COOKIES.get(settings.SESSION_COOKIE_NAME, "")
        or client_address(request)
    )
    digest = hashlib.sha256(identity.encode()).hexdigest()[:32]
    return f"read-your-writes:{digest}"


def remember_write(request) -> None:
    """After a caller's write: the primary's WAL position, which their next reads need."""
    try:
        caches["default"].set(
            caller_key(request), wal_position(), timeout=settings.DATABASE_READ_YOUR_WRITES_SECONDS
        )
    except Exception:  # the write is done: its answer must not fail now
        # Unrecorded, the caller's next reads may lag behind it for at most the lag bound.
        return


def caller_lsn(request) -> int | None:
    """The WAL position of the caller's last write still remembered (0: none); None when the
    cache does not answer (then only the primary is sure to have it). Read from the cache that
    raises (`strict`, with Redis): `default` reads an outage as a miss, "no write", which would
    send a caller's reads to a replica that has not replayed them."""
    cache = caches["strict" if "strict" in settings.CACHES else "default"]
    try:
        return cache.get(caller_key(request)) or 0
    except Exception:  # whatever the cache backend raises when unreachable
        return None
