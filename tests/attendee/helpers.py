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
