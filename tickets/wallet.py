"""The ticket as an Apple Wallet pass (CONTRACT §14): `/t/<token>/ticket.pkpass`.

A pass is a zip of `pass.json`, its images, `manifest.json` (each file's SHA-1) and `signature`:
a detached PKCS #7 signature of the manifest, made with the operator's Pass Type ID certificate
and carrying Apple's WWDR intermediate, which Wallet checks before it shows the pass. Signed
with `cryptography`'s PKCS #7 builder, the same library the service already uses for its keys.
Without the settings of a certificate (`WALLET_*`) there are no passes: the ticket page shows
no link and the route is a 404.
"""

import functools
import hashlib
import io
import json
import zipfile
from datetime import UTC
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.serialization import pkcs7
from django.conf import settings
from PIL import Image

from .event_times import event_when
from .links import ticket_page_url
from .models import Ticket
from .signed_codes import ticket_qr_data

PASS_COLOR = "rgb(29, 78, 216)"
ICON_SIZES = {"icon.png": 29, "icon@2x.png": 58, "icon@3x.png": 87}


def wallet_enabled() -> bool:
    return bool(
        settings.WALLET_CERTIFICATE
        and settings.WALLET_KEY
        and settings.WALLET_WWDR_CERTIFICATE
        and settings.WALLET_PASS_TYPE_ID
        and settings.WALLET_TEAM_ID
    )


@functools.cache
def _signing_material(cert_path: str, key_path: str, password: str, wwdr_path: str):
    """The certificate, its key and the intermediate, read once per process (per settings)."""
    certificate = x509.load_pem_x509_certificate(Path(cert_path).read_bytes())
    key = serialization.load_pem_private_key(
        Path(key_path).read_bytes(), password=password.encode() or None
    )
    wwdr = x509.load_pem_x509_certificate(Path(wwdr_path).read_bytes())
    return certificate, key, wwdr


@functools.cache
def _icons() -> dict[str, bytes]:
    """Plain squares in the pass's colour: Wallet needs an icon, we have no artwork."""
    icons = {}
    for name, size in ICON_SIZES.items():
        out = io.BytesIO()
        Image.new("RGB", (size, size), (29, 78, 216)).save(out, format="PNG")
        icons[name] = out.getvalue()
    return icons


def pass_json(ticket: Ticket) -> dict:
    """The pass's fields; needs `ticket.event__organizer` and `ticket.ticket_type` loaded."""
    event = ticket.event
    secondary = [{"key": "type", "label": "Ticket type", "value": ticket.ticket_type.name}]
    if ticket.holder_name:
        secondary.insert(0, {"key": "holder", "label": "Name", "value": ticket.holder_name})
    auxiliary = [
        {"key": "when", "label": "When", "value": event_when(event.start_at, event.end_at)}
    ]
    if event.display_location_name:
        auxiliary.append({"key": "where", "label": "Where", "value": event.display_location_name})
    return {
        "formatVersion": 1,
        "passTypeIdentifier": settings.WALLET_PASS_TYPE_ID,
        "teamIdentifier": settings.WALLET_TEAM_ID,
        "serialNumber": f"ticket-{ticket.pk}",
        "organizationName": event.organizer.name,
        "description": event.title,
        "backgroundColor": PASS_COLOR,
        "foregroundColor": "rgb(255, 255, 255)",
        "labelColor": "rgb(219, 234, 254)",
        "relevantDate": event.start_at.astimezone(UTC).isoformat(),
        "barcodes": [
            {
                "format": "PKBarcodeFormatQR",
                "message": ticket_qr_data(ticket),  # what the QR code carries (CONTRACT §14)
                "messageEncoding": "iso-8859-1",
                "altText": ticket.reference_code,
            }
        ],
        "eventTicket": {
            "primaryFields": [{"key": "event", "label": "Event", "value": event.title}],
            "secondaryFields": secondary,
            "auxiliaryFields": auxiliary,
            "backFields": [
                {"key": "code", "label": "Reference code", "value": ticket.reference_code},
                {"key": "page", "label": "Ticket page", "value": ticket_page_url(ticket)},
                {"key": "organizer", "label": "Organizer", "value": _organizer(event.organizer)},
            ],
        },
    }


def _organizer(organizer) -> str:
    parts = (organizer.name, organizer.contact_email, organizer.contact_phone)
    return "\n".join(part for part in parts if part)


def ticket_pkpass(ticket: Ticket) -> bytes:
    """The signed `.pkpass` archive; only when `wallet_enabled()`."""
    files = {"pass.json": json.dumps(pass_json(ticket), ensure_ascii=False).encode()} | _icons()
    manifest = json.dumps(
        {name: hashlib.sha1(data).hexdigest() for name, data in files.items()}, sort_keys=True
    ).encode()
    certificate, key, wwdr = _signing_material(
        settings.WALLET_CERTIFICATE,
        settings.WALLET_KEY,
        settings.WALLET_KEY_PASSWORD,
        settings.WALLET_WWDR_CERTIFICATE,
    )
    signature = (
        pkcs7.PKCS7SignatureBuilder()
        .set_data(manifest)
        .add_signer(certificate, key, hashes.SHA256())
        .add_certificate(wwdr)
        .sign(
            serialization.Encoding.DER,
            [pkcs7.PKCS7Options.DetachedSignature, pkcs7.PKCS7Options.Binary],
        )
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        archive.writestr("manifest.json", manifest)
        archive.writestr("signature", signature)
    return out.getvalue()
