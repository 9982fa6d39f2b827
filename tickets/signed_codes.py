"""Signed ticket codes (CONTRACT §14): `T1.<payload>.<signature>`, made and checked here only.

`payload` is the base64url (no padding) of the JSON `{"o", "e", "t", "y", "c", "k"}` (organizer,
event, ticket, ticket type, reference code, key id); `signature` the base64url of the Ed25519
signature of the ASCII text `T1.<payload>` by the event's key `k`. A scanner offline admits a
ticket it has never synced when the signature verifies with a key of the sync feed.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature

from events.signing_keys import b64url, signing_key_active, signing_key_public
from ticketing.api.fields import INT32_MAX

from .models import Ticket

SIGNED_CODE_PREFIX = "T1."
# The longest code the service makes is 254 characters (every id at int32's limit, a 32-character
# reference code, a 16-character key id); anything longer is refused before it is parsed.
SIGNED_CODE_MAX_LENGTH = 300
SIGNED_CODE_PATTERN = r"T1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+"
_SIGNED_CODE = re.compile(r"T1\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{86})")  # 64 bytes signed
_PAYLOAD_INTS = ("o", "e", "t", "y")


@dataclass(frozen=True)
class SignedTicket:
    """What a verified code names: the ticket by id, and the reference code it had when signed."""

    ticket_id: int
    reference_code: str


def signed_code(ticket: Ticket, *, organizer_id: int) -> str:
    """The ticket's signed code, by its event's active key (made if the event has none)."""
    preloaded = (
        getattr(ticket, "signing_key_id", None),
        getattr(ticket, "signing_key_secret", None),
    )  # `active_key_annotations`, when the ticket's query read them
    key = signing_key_active(event_id=ticket.event_id, preloaded=preloaded)
    data = {
        "o": organizer_id,
        "e": ticket.event_id,
        "t": ticket.pk,
        "y": ticket.ticket_type_id,
        "c": ticket.reference_code,
        "k": key.key_id,
    }
    signed = SIGNED_CODE_PREFIX + b64url(json.dumps(data, separators=(",", ":")).encode())
    return f"{signed}.{b64url(key.private_key.sign(signed.encode('ascii')))}"


def ticket_qr_data(ticket: Ticket) -> str:
    """What the ticket's QR code carries: its signed code when its event signs codes, else the
    reference code exactly, as before signed codes (the printed code is always the latter)."""
    event = ticket.event
    if not event.signed_codes:
        return ticket.reference_code
    return signed_code(ticket, organizer_id=event.organizer_id)


def signed_code_read(code: str, *, organizer_id: int, event_id: int) -> SignedTicket | None:
    """The ticket a signed code names, if it verifies with the event's key it names (not
    retired) and is for this organizer's event; None for anything else, however malformed."""
    matched = _SIGNED_CODE.fullmatch(code) if len(code) <= SIGNED_CODE_MAX_LENGTH else None
    if matched is None:
        return None
    data = _payload(matched.group(1))
    if data is None or data["e"] != event_id or data["o"] != organizer_id:
        return None
    key = signing_key_public(event_id=event_id, key_id=data["k"])
    if key is None or key.organizer_id != organizer_id:
        return None
    try:
        key.key.verify(_unb64(matched.group(2)), f"T1.{matched.group(1)}".encode("ascii"))
    except InvalidSignature:
        return None
    return SignedTicket(ticket_id=data["t"], reference_code=data["c"])


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _payload(text: str) -> dict | None:
    """The payload's fields, each of its type and range; None if it is not such an object."""
    try:
        data = json.loads(_unb64(text))
    except (ValueError, binascii.Error):  # bad base64, bad UTF-8, bad JSON
        return None
    if not isinstance(data, dict):
        return None
    for name in _PAYLOAD_INTS:
        value = data.get(name)
        if type(value) is not int or not 1 <= value <= INT32_MAX:
            return None
    if not isinstance(data.get("c"), str) or not isinstance(data.get("k"), str):
        return None
    return data
