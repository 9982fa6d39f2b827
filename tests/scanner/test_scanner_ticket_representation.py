"""The scanner's ticket (CONTRACT §11) renders exactly what DRF makes of its declared fields."""

from datetime import UTC, datetime

from rest_framework import serializers

from checkin.selectors_scanner import ScannerTicketRow
from checkin.serializers import ScannerTicketSerializer


def _row(**overrides) -> ScannerTicketRow:
    values = {
        "id": 41,
        "reference_code": "SSF-0041",
        "nfc_uid": "04A1B2C3",
        "status": "used",
        "order_paid": True,
        "ticket_type_id": 3,
        "ticket_type_name": "VIP <lounge>",
        "firstname": "สมชาย",
        "lastname": "Jaidee",
        "used_at": datetime(2026, 11, 27, 12, 30, tzinfo=UTC),
        "updated_at": datetime(2026, 11, 27, 12, 30, 1, 250000, tzinfo=UTC),
        "checked_in_type_ids": [5, 7],
    }
    return ScannerTicketRow(**{**values, **overrides})


def test_scanner_ticket_is_drfs_walk_of_its_fields():
    rows = [
        _row(),
        _row(nfc_uid=None, status="active", used_at=None, checked_in_type_ids=[]),
        _row(firstname="", lastname="", order_paid=False, status="revoked"),
    ]
    for row in rows:
        direct = ScannerTicketSerializer().to_representation(row)
        walked = dict(serializers.Serializer.to_representation(ScannerTicketSerializer(), row))
        assert direct == walked
        assert list(direct) == list(ScannerTicketSerializer().fields)
    blank = ScannerTicketSerializer().to_representation(rows[2])
    assert blank["firstname"] is None and blank["lastname"] is None
    assert ScannerTicketSerializer().to_representation(rows[0])["used_at"] == (
        "2026-11-27T19:30:00+07:00"
    )
