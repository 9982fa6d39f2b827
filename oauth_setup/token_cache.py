"""Validated access tokens, kept in each process so that an API call need not ask the database.

A gate scanner presents the same token thousands of times, and DOT's lookup (the token with its
application and user, one ORM query) costs more than the rest of a check-in. A token DOT has
validated is kept in the process's memory (at most `MAX_TOKENS`, least recently used out first)
for at most `API_TOKEN_CACHE_SECONDS`.

When the database says otherwise, `oauth_setup.signals` forgets the token: when it, its user or
its application is saved or deleted (revoking a token deletes it). Forgetting drops this
process's copy and writes a marker in the shared cache that lives `API_TOKEN_CACHE_SECONDS`, at
once and again on commit. Every request served from a copy reads its token's marker in the same
round trip as its rate-limit counters (`ticketing.api.throttling.count_request`), and a marker
sends it to the database: a revocation reaches every process with that process's next request,
not after the copy's lifetime. A copy is kept only if that read, made after the database's,
found no marker, and lives no longer than a marker written after that read: so no copy taken
before a revocation outlives the marker that hides it. A cache that does not answer serves no
copy (the database decides).

The markers must be in a cache every process shares (Redis) for that to reach them all, so the
setting defaults to 0 (off) without `REDIS_URL`. A marker that cannot be written fails the change
that needed it (the `strict` cache raises, also while `ticketing.cache` skips a Redis that just
failed), so a revocation is never lost to a cache outage. The copy leaves out the token's stored
value, the user's password hash and the application's secret hash, and each request gets its own
instance of it. Tokens restricted to a resource (RFC 8707) are never kept: DOT checks them
against each request's URI.

A copy also keeps the user's role in each organizer the user was found a member of
(`KeptRoles`), so that a gate's scan with a member's token asks the database nothing before its
admission. A role is read and kept only in a request whose marker read found none, and lives no
longer than the copy: `oauth_setup.signals` forgets a user's tokens when a membership of
theirs changes or goes (an organizer's deletion takes its memberships with it), so a changed role
is seen as a revocation is. Only roles are kept, never their absence: a membership added reaches
every process at once.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.core.cache import caches
from django.db import transaction
from django.utils import timezone
from oauth2_provider.models import get_access_token_model

from .exceptions import TokenCacheUnavailable
from .validators import token_may_act

logger = logging.getLogger(__name__)

KEY_PREFIX = "api-token:v1:"  # the version: a deployment that changes the models bumps it
FORGOTTEN = "forgotten"
MAX_TOKENS = 4096  # a few hundred scanners and clients per process, with room to spare
MAX_ROLES = 64  # organizers whose role one copy keeps; a user of more asks the database
# Not worth caching a token about to expire: DOT's own lookup decides its last moments.
_MIN_LIFETIME = timedelta(seconds=5)


@dataclass(slots=True)
class _Copy:
    drop_at: float  # the monotonic time it must be dropped
    token: object  # never handed out itself: each request gets its own copy (`_instance`)
    # organizer id -> (the user's role, the monotonic time it must be dropped)
    roles: dict[int, tuple[str, float]] = field(default_factory=dict)


_copies: OrderedDict[str, _Copy] = OrderedDict()  # by checksum
_lock = threading.Lock()  # for threaded workers


def checksum_of(raw_token: str) -> str:
    """DOT's `token_checksum` of a presented token."""
    return hashlib.sha256(raw_token.encode("utf-8")).hexdigest()


def marker_key(checksum: str) -> str:
    """The shared cache's key whose presence says: do not serve this token from a copy."""
    return KEY_PREFIX + checksum


def cached_token(raw_token: str):
    """This process's copy of the AccessToken (with its user and application) if still valid.

    The caller must still check the token's marker (`marker_key`) before trusting it.
    """
    if not settings.API_TOKEN_CACHE_SECONDS:
        return None
    checksum = checksum_of(raw_token)
    with _lock:
        entry = _live_copy(checksum)
        if entry is None:
            return None
        _copies.move_to_end(checksum)
    token = _instance(entry.token)
    return token if token_may_act(token) else None


def _instance(kept):
    """A request's own instance of a kept token, user and application: shallow copies (their
    field values are immutable), so that nothing a request caches or sets on one reaches the
    next request. Half the cost of unpickling a pickled copy."""
    token = copy.copy(kept)
    if kept.user is not None:
        token.user = copy.copy(kept.user)
    token.application = copy.copy(kept.application)
    return token


def _live_copy(checksum: str) -> _Copy | None:
    """The copy of `checksum`, if it is not due to be dropped (the caller holds `_lock`)."""
    entry = _copies.get(checksum)
    if entry is not None and entry.drop_at <= time.monotonic():
        del _copies[checksum]
        return None
    return entry


def remember(token, *, read_at: float) -> None:
    """Keep `token`, which DOT validated and whose marker was absent, read after `read_at`
    (`time.monotonic()` taken before both reads)."""
    seconds = settings.API_TOKEN_CACHE_SECONDS
    lifetime = token.expires - timezone.now()
    if not seconds or lifetime < _MIN_LIFETIME or token.resource:
        return
    kept = _without(token, "token")
    if token.user is not None:
        kept.user = _without(token.user, "password")
    kept.application = _without(token.application, "client_secret")
    drop_at = min(read_at + seconds, time.monotonic() + lifetime.total_seconds())
    with _lock:
        _copies[token.token_checksum] = _Copy(drop_at, kept)
        _copies.move_to_end(token.token_checksum)
        while len(_copies) > MAX_TOKENS:
            _copies.popitem(last=False)


class KeptRoles:
    """The roles kept with the copy of a token whose marker a request found absent, in a read
    made after `read_at` (`time.monotonic()` taken before it): the request's `kept_roles`
    (`ticketing.api.caller.RoleMemo`)."""

    __slots__ = ("checksum", "read_at")

    def __init__(self, checksum: str, *, read_at: float):
        self.checksum, self.read_at = checksum, read_at

    def role_in(self, organizer_id: int) -> str | None:
        with _lock:
            entry = _live_copy(self.checksum)
            kept = entry.roles.get(organizer_id) if entry is not None else None
        if kept is None or kept[1] <= time.monotonic():
            return None
        return kept[0]

    def keep(self, organizer_id: int, role: str) -> None:
        """Keep the user's role in this organizer, read from the database after `read_at`."""
        with _lock:
            entry = _live_copy(self.checksum)
            if entry is None or (organizer_id not in entry.roles and len(entry.roles) >= MAX_ROLES):
                return
            # No later than a marker written after this request's read of it: the copy may have
            # been kept by a request that read its marker later.
            drop_at = min(entry.drop_at, self.read_at + settings.API_TOKEN_CACHE_SECONDS)
            entry.roles[organizer_id] = (role, drop_at)


def drop(checksum: str) -> None:
    """Forget this process's copy only (its marker was seen)."""
    with _lock:
        _copies.pop(checksum, None)


def forget(checksums) -> None:
    """Mark these tokens as not to be served from any process's copy, now and after the commit.

    Raises: TokenCacheUnavailable, so that the revocation or change calling this rolls back.
    """
    seconds = settings.API_TOKEN_CACHE_SECONDS
    checksums = [checksum for checksum in checksums if checksum]
    if not seconds or not checksums:
        return
    for checksum in checksums:
        drop(checksum)
    keys = [marker_key(checksum) for checksum in checksums]

    def mark():
        caches["strict"].set_many(dict.fromkeys(keys, FORGOTTEN), timeout=seconds)

    try:
        mark()
    except Exception as exc:  # whatever the cache backend raises when it is unreachable
        logger.error("token cache unreachable; refusing the change: %s", exc)
        raise TokenCacheUnavailable() from exc
    # The marker above already keeps every process from serving or keeping a copy; this one
    # only covers a transaction that outlives it.
    transaction.on_commit(mark, robust=True)


def forget_tokens_of(**owner) -> None:
    """Forget the live tokens of a user or an application (`user=` / `application=`, `pk=`)."""
    if not settings.API_TOKEN_CACHE_SECONDS:
        return
    AccessToken = get_access_token_model()
    live = AccessToken.objects.filter(expires__gt=timezone.now(), **owner)
    forget(live.values_list("token_checksum", flat=True))


def _without(instance, *secret_fields: str):
    """A copy of a model instance from its field values, `secret_fields` left deferred."""
    names = [f.attname for f in instance._meta.concrete_fields if f.name not in secret_fields]
    values = [getattr(instance, name) for name in names]
    return type(instance).from_db(instance._state.db, names, values)
