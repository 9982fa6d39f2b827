"""Limits on guessing credentials: client secrets on /oauth/*, passwords on the sign-in pages.

Failed checks are counted in the cache, with the API's counters (`ticketing.api.throttling`),
only where the count cannot be run up by someone else (CONTRACT §9):

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

An attempt reads its failure counts, and counts itself where every attempt counts (the token
endpoint's per-address limit), in one round trip; a failure adds to its counts in one more.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import UsernameField

from ticketing.api.throttling import Counter, count_and_read_counters, rate_counter
from ticketing.proxies import client_address

_GROUP = "credential-failures"


@dataclass(frozen=True)
class Limit:
    """One count: its group, whom in it a request counts against, and its rate's setting."""

    group: str
    whom: Callable[[object], str]
    rate_setting: str

    def counter(self, request) -> Counter:
        return rate_counter(self.group, getattr(settings, self.rate_setting), self.whom(request))


@dataclass(frozen=True)
class Refusal:
    retry_after: int  # seconds until the count that refused ends its window
    failures: bool  # refused for failed attempts, not for attempts alone


@dataclass(frozen=True)
class Attempt:
    """A credential check about to be made: the failure counts that refuse it at their limit,
    and the counts of every attempt (`hits`) that refuse it past theirs."""

    failures: tuple[Limit, ...]
    hits: tuple[Limit, ...] = ()

    def check(self, request) -> Refusal | None:
        """Count the attempt against `hits` and read the failure counts, in one round trip:
        the refusal with the longest wait, or None if the attempt may be made now."""
        if not getattr(settings, "RATELIMIT_ENABLE", True):
            return None
        hits = [limit.counter(request) for limit in self.hits]
        failures = [limit.counter(request) for limit in self.failures]
        counts, failed = count_and_read_counters(hits, failures)
        refusals = [
            Refusal(_seconds_left(counter), failures=False)
            for counter, count in zip(hits, counts, strict=True)
            if count is not None and count > counter.limit
        ] + [
            Refusal(_seconds_left(counter), failures=True)
            for counter, count in zip(failures, failed, strict=True)
            if count >= counter.limit
        ]
        return max(refusals, key=lambda refusal: refusal.retry_after, default=None)

    def failed(self, request) -> None:
        if getattr(settings, "RATELIMIT_ENABLE", True):
            count_and_read_counters([limit.counter(request) for limit in self.failures], [])


def _seconds_left(counter: Counter) -> int:
    return max(1, counter.window_end - int(time.time()))


def client_attempt(request, *, token_request: bool = False) -> Attempt:
    """An OAuth client authenticating (RFC 6749 §2.3): its failures counted per client address
    only; a token request also counted per address, failed or not (`TOKEN_RATE_LIMIT`)."""
    hits = (Limit("oauth-token", client_address, "TOKEN_RATE_LIMIT"),) if token_request else ()
    return Attempt(
        failures=(Limit(f"{_GROUP}:address", client_address, "CREDENTIAL_FAILURE_RATE_LIMIT"),),
        hits=hits,
    )


def sign_in_attempt(request) -> Attempt:
    """A person signing in: every spelling of a username that signs in as one account counts
    as that account."""
    failures = [
        Limit(f"{_GROUP}:sign-in-address", client_address, "SIGN_IN_ADDRESS_FAILURE_RATE_LIMIT")
    ]
    username = _counted_username(request.POST.get("username", ""))
    if username:
        by_user_address = f"{_GROUP}:user-address:{username}"  # whom: still the address
        failures += [
            Limit(by_user_address, client_address, "CREDENTIAL_FAILURE_RATE_LIMIT"),
            Limit(f"{_GROUP}:user", lambda _: f"user:{username}", "USERNAME_FAILURE_RATE_LIMIT"),
        ]
    return Attempt(failures=tuple(failures))


def _counted_username(typed: str) -> str:
    """The username as the sign-in form reads it (trimmed, NFKC: `ｓｔａｆｆ` and `𝐬taff` are
    `staff`), case-folded as people type names, and cut at the longest possible username."""
    max_length = get_user_model()._meta.get_field("username").max_length
    return UsernameField(max_length=max_length).to_python(typed).casefold()[:max_length]
