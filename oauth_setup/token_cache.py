"""Validated access tokens, kept in the cache so that an API call need not ask the database.

A gate scanner presents the same token thousands of times, and DOT's lookup (the token with its
application and user, one ORM query) costs more than the rest of a check-in. A token DOT has
validated is cached under its checksum for at most `API_TOKEN_CACHE_SECONDS`.

When the database says otherwise, `oauth_setup.signals` forgets the token: when it, its user or
its application is saved or deleted (revoking a token deletes it). Forgetting leaves a marker
for as long as a cached copy could live, at once and again on commit, and a token is cached
only where no entry exists: a request that read the token just before its revocation cannot
store it afterwards.

The cache must be shared by every process (Redis) for that to reach them all, so the setting
defaults to 0 (off) without `REDIS_URL`. A marker that cannot be written fails the change that
needed it (the `strict` cache raises, also while `ticketing.cache` skips a Redis that just
failed), so a revocation is never lost to a cache outage; reading and storing fail open, as a
cache miss. The cached copy leaves out the token's stored value, the
user's password hash and the application's secret hash. Tokens restricted to a resource
(RFC 8707) are never cached: DOT checks them against each request's URI.
"""

from __future__ import annotations

import hashlib
import logging
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache, caches
from django.db import transaction
from django.utils import timezone
from oauth2_provider.models import get_access_token_model

from .exceptions import TokenCacheUnavailable
from .validators import token_may_act

logger = logging.getLogger(__name__)

KEY_PREFIX = "api-token:v1:"  # the version: a deployment that changes the models bumps it
FORGOTTEN = "forgotten"
# Not worth caching a token about to expire: DOT's own lookup decides its last moments.
_MIN_LIFETIME = timedelta(seconds=5)


def checksum_of(raw_token: str) -> str:
    """DOT's `token_checksum` of a presented token."""
    return hashlib.sha256(raw_token.encode("utf-8")).hexdigest()


def _key(checksum: str) -> str:
    return KEY_PREFIX + checksum


def cached_token(raw_token: str):
    """The cached AccessToken (with its user and application) if still valid, else None."""
    if not settings.API_TOKEN_CACHE_SECONDS:
        return None
    token = cache.get(_key(checksum_of(raw_token)))
    if not isinstance(token, get_access_token_model()) or not token_may_act(token):
        return None
    return token


def remember(token) -> None:
    """Cache `token`, with its user and application, which DOT has just validated."""
    seconds = settings.API_TOKEN_CACHE_SECONDS
    lifetime = token.expires - timezone.now()
    if not seconds or lifetime < _MIN_LIFETIME or token.resource:
        return
    copy = _without(token, "token")
    if token.user is not None:
        copy.user = _without(token.user, "password")
    copy.application = _without(token.application, "client_secret")
    cache.add(_key(token.token_checksum), copy, timeout=min(seconds, lifetime.total_seconds()))


def forget(checksums) -> None:
    """Mark these tokens as not to be served from the cache, now and after the commit.

    Raises: TokenCacheUnavailable, so that the revocation or change calling this rolls back.
    """
    seconds = settings.API_TOKEN_CACHE_SECONDS
    keys = [_key(checksum) for checksum in checksums if checksum]
    if not seconds or not keys:
        return

    def mark():
        caches["strict"].set_many(dict.fromkeys(keys, FORGOTTEN), timeout=seconds)

    try:
        mark()
    except Exception as exc:  # whatever the cache backend raises when it is unreachable
        logger.error("token cache unreachable; refusing the change: %s", exc)
        raise TokenCacheUnavailable() from exc
    # The marker above already keeps a concurrent reader from storing the token; this one
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
