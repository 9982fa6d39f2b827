"""Limits on guessing credentials: client secrets on /oauth/*, passwords on the sign-in pages.

Failed checks are counted in the cache (django-ratelimit, like the token endpoint's per-address
limit), only where the count cannot be run up by someone else (CONTRACT §9):

- a client secret, per client address (`CREDENTIAL_FAILURE_RATE_LIMIT`). Not per client: a
  client id is no secret (a public client's is in its app), and a generated secret of 128
  random characters cannot be guessed anyway, so a count per client only let anyone refuse an
  integration everywhere;
- a password, per username and address (`CREDENTIAL_FAILURE_RATE_LIMIT`), and per address
  whatever the username (`SIGN_IN_ADDRESS_FAILURE_RATE_LIMIT`, higher: people behind one
  address, a carrier's NAT, fail for each other's accounts); per username from every address
  only for a few seconds (`USERNAME_FAILURE_RATE_LIMIT`), which slows guessing from many
  addresses at once without locking the person out.

While a count is at its limit, attempts it covers are refused with 429 until its window ends,
even with the right credential, so a guesser learns nothing more. Only failures count: a
resource server introspecting every request it serves, or an app busy signing users in, never
fails and is never slowed. As every counter, they fail open when the cache is down.
"""

from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django_ratelimit.core import get_usage

_GROUP = "credential-failures"


@dataclass(frozen=True)
class Counter:
    """One count of failures: its django-ratelimit group and key, and its rate's setting."""

    group: str
    key: str | Callable
    rate_setting: str

    def usage(self, request, *, increment: bool):
        return get_usage(
            request,
            group=self.group,
            key=self.key,
            rate=getattr(settings, self.rate_setting),
            increment=increment,
        )


@dataclass(frozen=True)
class Attempt:
    """A credential check about to be made, and the counts its failure adds to."""

    counters: tuple[Counter, ...]

    def retry_after(self, request) -> int | None:
        """Seconds until the attempt may be made (the longest wait of the counts at their
        limit), or None if it may be made now."""
        waits = []
        for counter in self.counters:
            usage = counter.usage(request, increment=False)
            if usage is not None and usage["count"] >= usage["limit"]:
                waits.append(max(1, int(usage["time_left"])))
        return max(waits, default=None)

    def failed(self, request) -> None:
        for counter in self.counters:
            counter.usage(request, increment=True)


def client_attempt(request) -> Attempt:
    """An OAuth client authenticating (RFC 6749 §2.3): counted per client address only."""
    return Attempt(counters=(Counter(f"{_GROUP}:address", "ip", "CREDENTIAL_FAILURE_RATE_LIMIT"),))


def sign_in_attempt(request) -> Attempt:
    """A person signing in: usernames are counted case-insensitively, as people type them."""
    counters = [Counter(f"{_GROUP}:sign-in-address", "ip", "SIGN_IN_ADDRESS_FAILURE_RATE_LIMIT")]
    username = request.POST.get("username", "").strip().casefold()
    if username:
        counters += [
            # The username is in the group, so the key stays django-ratelimit's client
            # address (which honours RATELIMIT_IP_META_KEY behind a proxy).
            Counter(f"{_GROUP}:user-address:{username}", "ip", "CREDENTIAL_FAILURE_RATE_LIMIT"),
            Counter(
                f"{_GROUP}:user",
                lambda _group, _request: f"user:{username}",
                "USERNAME_FAILURE_RATE_LIMIT",
            ),
        ]
    return Attempt(counters=tuple(counters))
