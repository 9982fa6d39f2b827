"""An event's signing keys (CONTRACT §14): made, rotated and retired here, and read back cheaply.

Ed25519 keys from `cryptography`. The private key never leaves the server: it is stored encrypted
(`ticketing.encryption`) and used only to sign the event's ticket codes. The newest key not
retired is the active one; older keys keep verifying the codes they signed until retired.

A scan verifies with the key its code names, found by (event, key id). Each process keeps what it
read for `SIGNING_KEY_CACHE_SECONDS`, so verifying costs no query at the gate's pace; a retirement
drops the key at once in the process that made it and within that time everywhere else.
"""

from __future__ import annotations

import base64
import secrets
import string
import time
from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import OuterRef, QuerySet, Subquery
from django.utils import timezone

from ticketing.api.exceptions import NotFound
from ticketing.encryption import fernet

from .models import Event, EventSigningKey

ALGORITHM = "Ed25519"
_LABEL = "ticketing.events.signing_keys"
# Keys a process remembers; past this it starts over (forged codes name made-up key ids).
_CACHE_MAX = 4096


@dataclass(frozen=True)
class PublicKey:
    """A key that verifies the event's codes, with the event's organizer (the code's `o`)."""

    key_id: str
    organizer_id: int
    key: Ed25519PublicKey


@dataclass(frozen=True)
class SigningKey:
    """The event's active key, able to sign."""

    key_id: str
    private_key: Ed25519PrivateKey


def b64url(data: bytes) -> str:
    """base64url without padding, as the codes and the feed carry bytes."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


# Letters and digits only: a key id never starts with "-", which a command line reads as an option.
_KEY_ID_ALPHABET = string.ascii_letters + string.digits
_KEY_ID_LENGTH = 8  # about 47 random bits; unique in the table


def _key_id() -> str:
    return "".join(secrets.choice(_KEY_ID_ALPHABET) for _ in range(_KEY_ID_LENGTH))


def _create(event_id: int) -> EventSigningKey:
    private = Ed25519PrivateKey.generate()
    public = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    for _ in range(3):  # a key id drawn twice: draw again
        try:
            with transaction.atomic():
                return EventSigningKey.objects.create(
                    event_id=event_id,
                    key_id=_key_id(),
                    public_key=public,
                    private_key_encrypted=fernet(_LABEL)
                    .encrypt(private.private_bytes_raw())
                    .decode(),
                )
        except IntegrityError:
            continue
    raise RuntimeError("could not draw a unique signing key id")


def _locked_event(event_id: int) -> Event:
    """The event row, locked: the key changes of one event happen one at a time."""
    event = Event.objects.select_for_update(of=("self",)).filter(pk=event_id).first()
    if event is None:
        raise NotFound("Event not found.")
    return event


def event_signing_keys_live(*, event_id: int) -> QuerySet[EventSigningKey]:
    """The event's keys not retired, newest (the active one) first."""
    return EventSigningKey.objects.filter(event_id=event_id, retired_at__isnull=True).order_by(
        "-id"
    )


@transaction.atomic
def event_signing_key_rotate(*, event_id: int) -> EventSigningKey:
    """Make a new active key for the event; older keys keep verifying what they signed.

    Raises: NotFound. Locks: the event row until commit.
    """
    _locked_event(event_id)
    key = _create(event_id)
    _forget(event_id)
    return key


@transaction.atomic
def event_signing_key_ensure(*, event_id: int) -> EventSigningKey:
    """The event's active key, made if it has none (an event older than signed codes).

    Raises: NotFound. Locks: the event row, when a key must be made.
    """
    key = event_signing_keys_live(event_id=event_id).first()
    if key is not None:
        return key
    _locked_event(event_id)  # then read again: another request may have made it meanwhile
    return event_signing_keys_live(event_id=event_id).first() or _create(event_id)


@transaction.atomic
def event_signing_key_retire(*, event_id: int, key_id: str) -> EventSigningKey:
    """Retire a key: the codes it signed become unknown codes, and the feed no longer lists it.
    Retiring the active key makes a new one, so new codes never fall back to an older key.

    Raises: NotFound (event, or no such key of it not yet retired). Locks: the event row.
    """
    _locked_event(event_id)
    live = list(event_signing_keys_live(event_id=event_id))
    key = next((k for k in live if k.key_id == key_id), None)
    if key is None:
        raise NotFound(f"The event has no signing key {key_id} in use.")
    key.retired_at = timezone.now()
    key.save(update_fields=["retired_at"])
    if key is live[0]:
        _create(event_id)
    _forget(event_id)
    return key


# --- Read back, cached per process ----------------------------------------------------------

_public: dict[tuple[int, str], tuple[PublicKey | None, float]] = {}
_signing: dict[int, tuple[SigningKey, float]] = {}
_decrypted: dict[str, SigningKey] = {}  # by key id: a key's private half never changes


def signing_keys_forget() -> None:
    """Forget every key this process read (tests: ids come back after a rolled-back test)."""
    _public.clear()
    _signing.clear()
    _decrypted.clear()


def _forget(event_id: int) -> None:
    """Drop what this process remembers of the event's keys, once the change commits."""

    def drop() -> None:
        _signing.pop(event_id, None)
        for cached in [k for k in _public if k[0] == event_id]:
            _public.pop(cached, None)

    drop()
    transaction.on_commit(drop)


def _fresh_until() -> float:
    return time.monotonic() + settings.SIGNING_KEY_CACHE_SECONDS


def signing_key_public(*, event_id: int, key_id: str) -> PublicKey | None:
    """The event's key `key_id` if it is not retired, else None; one query per key and
    `SIGNING_KEY_CACHE_SECONDS` in a process (misses included)."""
    cached = _public.get((event_id, key_id))
    if cached is not None and cached[1] > time.monotonic():
        return cached[0]
    row = (
        event_signing_keys_live(event_id=event_id)
        .filter(key_id=key_id)
        .values_list("public_key", "event__organizer_id")
        .first()
    )
    found = None
    if row is not None:
        found = PublicKey(key_id, row[1], Ed25519PublicKey.from_public_bytes(bytes(row[0])))
    if len(_public) >= _CACHE_MAX:
        _public.clear()
    _public[(event_id, key_id)] = (found, _fresh_until())
    return found


def active_key_annotations(event: str = "event_id") -> dict[str, Subquery]:
    """Annotations that load the active key of the row's event (`event`: the path to its id) in
    the row's own query, for `signing_key_active(preloaded=...)`: the ticket's page and files
    then sign without a query of their own."""
    live = event_signing_keys_live(event_id=OuterRef(event))
    return {
        "signing_key_id": Subquery(live.values("key_id")[:1]),
        "signing_key_secret": Subquery(live.values("private_key_encrypted")[:1]),
    }


def _decrypt(key_id: str, encrypted: str) -> SigningKey:
    key = _decrypted.get(key_id)
    if key is None:
        private = fernet(_LABEL).decrypt(encrypted.encode())
        key = SigningKey(key_id, Ed25519PrivateKey.from_private_bytes(private))
        if len(_decrypted) >= _CACHE_MAX:
            _decrypted.clear()
        _decrypted[key_id] = key
    return key


def signing_key_active(
    *, event_id: int, preloaded: tuple[str | None, str | None] = (None, None)
) -> SigningKey:
    """The event's active key, able to sign (made if the event has none yet). `preloaded`: the
    key id and encrypted secret `active_key_annotations` read, if the caller's query did.

    Raises: NotFound (no such event).
    """
    if preloaded[0] is not None and preloaded[1] is not None:
        return _decrypt(*preloaded)
    cached = _signing.get(event_id)
    if cached is not None and cached[1] > time.monotonic():
        return cached[0]
    row = event_signing_key_ensure(event_id=event_id)
    key = _decrypt(row.key_id, row.private_key_encrypted)
    if len(_signing) >= _CACHE_MAX:
        _signing.clear()
    _signing[event_id] = (key, _fresh_until())
    return key


def signing_keys_published(*, event_id: int) -> list[dict]:
    """The event's keys as the sync feed lists them (CONTRACT §11): retired ones left out,
    `active` for the one signing new codes."""
    rows = event_signing_keys_live(event_id=event_id).values_list("key_id", "public_key")
    return [
        {
            "key_id": key_id,
            "algorithm": ALGORITHM,
            "public_key": b64url(bytes(public)),
            "active": index == 0,
        }
        for index, (key_id, public) in enumerate(rows)
    ]
