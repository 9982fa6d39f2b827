"""The Apple Wallet pass (CONTRACT §14): built and signed only where the operator configured a
pass certificate. The test makes its own certificate authority (standing in for Apple's WWDR)
and pass certificate, and checks the archive as Wallet does: every file's SHA-1 in the manifest,
the manifest's detached PKCS #7 signature against the authority (with OpenSSL's own verifier)."""

import hashlib
import io
import json
import subprocess
import zipfile
from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from tickets.links import ticket_page_path
from tickets.models import Ticket

from .helpers import signed_reference, ticket_songkran

pytestmark = pytest.mark.django_db

PASS_TYPE_ID = "pass.example.tickets"


def _certificate(subject: str, key, issuer_name: x509.Name | None, issuer_key, *, ca: bool):
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    now = datetime.now(UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer_name or name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .sign(issuer_key, hashes.SHA256())
    )


@pytest.fixture
def pass_certificate(tmp_path, settings):
    """A CA (the WWDR's stand-in) and a Pass Type ID certificate it signed, with an encrypted
    key, written as the operator would, and the settings pointing at them."""
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca = _certificate("Test WWDR", ca_key, None, ca_key, ca=True)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    cert = _certificate(f"Pass Type ID: {PASS_TYPE_ID}", key, ca.subject, ca_key, ca=False)
    pem = serialization.Encoding.PEM
    (tmp_path / "wwdr.pem").write_bytes(ca.public_bytes(pem))
    (tmp_path / "pass.pem").write_bytes(cert.public_bytes(pem))
    (tmp_path / "pass.key").write_bytes(
        key.private_bytes(
            pem,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"secret"),
        )
    )
    settings.WALLET_PASS_TYPE_ID = PASS_TYPE_ID
    settings.WALLET_TEAM_ID = "ABCDE12345"
    settings.WALLET_CERTIFICATE = str(tmp_path / "pass.pem")
    settings.WALLET_KEY = str(tmp_path / "pass.key")
    settings.WALLET_KEY_PASSWORD = "secret"
    settings.WALLET_WWDR_CERTIFICATE = str(tmp_path / "wwdr.pem")
    return tmp_path


def _openssl_verify(directory, manifest: bytes, signature: bytes) -> subprocess.CompletedProcess:
    (directory / "manifest.json").write_bytes(manifest)
    (directory / "signature").write_bytes(signature)
    command = ["openssl", "smime", "-verify", "-binary", "-inform", "DER", "-purpose", "any"]
    files = ["-in", "signature", "-content", "manifest.json", "-CAfile", "wwdr.pem"]
    return subprocess.run(
        [*command, *files, "-out", "/dev/null"], cwd=directory, capture_output=True, timeout=60
    )


def test_pass_archive_manifest_and_signature_verify(client, organizer, pass_certificate):
    ticket = ticket_songkran(organizer)

    response = client.get(f"{ticket_page_path(ticket)}/ticket.pkpass")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/vnd.apple.pkpass"
    assert response["Content-Disposition"] == 'attachment; filename="ABCD2345.pkpass"'
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    files = {name: archive.read(name) for name in archive.namelist()}
    assert set(files) == {
        "pass.json",
        "icon.png",
        "icon@2x.png",
        "icon@3x.png",
        "manifest.json",
        "signature",
    }
    manifest = json.loads(files["manifest.json"])
    assert manifest == {
        name: hashlib.sha1(data).hexdigest()
        for name, data in files.items()
        if name not in ("manifest.json", "signature")
    }
    verified = _openssl_verify(pass_certificate, files["manifest.json"], files["signature"])
    assert verified.returncode == 0, verified.stderr
    assert b"Verification successful" in verified.stderr
    # A changed manifest no longer matches its signature.
    tampered = files["manifest.json"].replace(b'"icon.png": "', b'"icon.png": "0')
    assert _openssl_verify(pass_certificate, tampered, files["signature"]).returncode != 0

    data = json.loads(files["pass.json"])
    assert (data["passTypeIdentifier"], data["teamIdentifier"]) == (PASS_TYPE_ID, "ABCDE12345")
    assert data["serialNumber"] == f"ticket-{ticket.pk}"
    assert data["organizationName"] == "Bangkok Live"
    assert data["barcodes"][0]["format"] == "PKBarcodeFormatQR"
    assert signed_reference(data["barcodes"][0]["message"]) == "ABCD2345"
    assert data["barcodes"][0]["altText"] == "ABCD2345"  # the printed code
    assert data["relevantDate"] == "2026-12-24T12:00:00+00:00"
    fields = data["eventTicket"]
    assert fields["primaryFields"][0]["value"] == "Songkran Beats"
    assert [f["value"] for f in fields["secondaryFields"]] == ["Somsak Jaidee", "Regular"]
    assert [f["value"] for f in fields["auxiliaryFields"]] == [
        "Dec. 24, 2026, 7 p.m. – 11:30 p.m.",
        "Impact Arena, Muang Thong Thani",
    ]


def test_ticket_page_links_the_pass_when_a_certificate_is_configured(
    client, organizer, pass_certificate
):
    ticket = ticket_songkran(organizer)

    html = client.get(ticket_page_path(ticket), HTTP_ACCEPT_LANGUAGE="en").content.decode()

    assert (
        f'<a id="wallet-link" href="/t/{ticket.page_token}/ticket.pkpass">Add to Apple Wallet</a>'
    ) in html


def test_without_a_certificate_there_is_no_pass_and_no_link(client, organizer, settings):
    settings.WALLET_CERTIFICATE = ""
    ticket = ticket_songkran(organizer)

    html = client.get(ticket_page_path(ticket)).content.decode()

    assert "wallet-link" not in html
    assert "pkpass" not in html
    assert client.get(f"{ticket_page_path(ticket)}/ticket.pkpass").status_code == 404


def test_revoked_ticket_has_no_pass(client, organizer, pass_certificate):
    ticket = ticket_songkran(organizer)
    Ticket.objects.filter(pk=ticket.pk).update(status=Ticket.Status.REVOKED)

    assert client.get(f"{ticket_page_path(ticket)}/ticket.pkpass").status_code == 404
    html = client.get(ticket_page_path(ticket)).content.decode()
    assert "wallet-link" not in html
