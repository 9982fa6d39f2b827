"""What the attendee tests share: a ticket with known times and place, reading QR codes back."""

import io
from datetime import UTC, datetime

import zxingcpp
from PIL import Image

from tests.factories import EventFactory, TicketFactory, TicketTypeFactory


def ticket_songkran(organizer, **ticket_fields):
    """ABCD2345 for Songkran Beats, 24 December 2026, 19:00-23:30 in Bangkok (12:00-16:30 UTC)."""
    event = EventFactory(
        organizer=organizer,
        title="Songkran Beats",
        location_name="Impact Arena",
        location_address="Muang Thong Thani",
        start_at=datetime(2026, 12, 24, 12, 0, tzinfo=UTC),
        end_at=datetime(2026, 12, 24, 16, 30, tzinfo=UTC),
    )
    regular = TicketTypeFactory(event=event, name="Regular")
    fields = {
        "reference_code": "ABCD2345",
        "firstname": "Somsak",
        "lastname": "Jaidee",
        "email": "somsak@example.com",
    }
    return TicketFactory(event=event, ticket_type=regular, **(fields | ticket_fields))


def qr_read(image_bytes: bytes) -> list[zxingcpp.Result]:
    """Every QR code a decoder library finds in the image."""
    image = Image.open(io.BytesIO(image_bytes))
    image.load()
    return [
        result
        for result in zxingcpp.read_barcodes(image.convert("RGB"))
        if result.format == zxingcpp.BarcodeFormat.QRCode
    ]


def qr_decode(image_bytes: bytes) -> list[str]:
    return [result.text for result in qr_read(image_bytes)]


def signed_reference(code: str) -> str:
    """The reference code a signed QR code names, checked as a partner's scanner would: by its
    signature with the event's published key (CONTRACT §14). Fails on anything else."""
    import base64
    import json

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from events.signing_keys import signing_keys_published

    def unb64(text: str) -> bytes:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))

    prefix, payload, signature = code.split(".")
    assert prefix == "T1"
    data = json.loads(unb64(payload))
    [key] = [k for k in signing_keys_published(event_id=data["e"]) if k["key_id"] == data["k"]]
    public_key = Ed25519PublicKey.from_public_bytes(unb64(key["public_key"]))
    public_key.verify(unb64(signature), f"T1.{payload}".encode())  # raises if forged
    return data["c"]


def qr_signed_references(image_bytes: bytes) -> list[str]:
    """`qr_decode`, each code a verified signed code, as the reference code it names."""
    return [signed_reference(code) for code in qr_decode(image_bytes)]
