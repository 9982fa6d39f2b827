"""The webhook POST on the wire (CONTRACT §13): it connects only to the checked address, verifies
TLS for the URL's host, reads a bounded answer, and its timeout bounds the whole attempt."""

import datetime
import logging
import socket
import socketserver
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from webhooks import network
from webhooks.exceptions import WebhookUrlRefused

NAME = "receiver.example.test"


def _send(target: network.Target, timeout: float = 5) -> int:
    return network.post(target, body=b"{}", headers={"webhook-id": "evt_1"}, timeout=timeout)


def _checked(url: str, monkeypatch, address: str = "127.0.0.1") -> network.Target:
    monkeypatch.setattr(network, "resolve", lambda host, port: [address])
    return network.target_check(url, allow_private=True)


class ScriptedReceiver:
    """A TCP server on 127.0.0.1 that reads each request's head and body, then runs `answer`
    on the connection; counts the connections it accepted."""

    def __init__(self, answer):
        self.connections = 0
        self.stopped = threading.Event()
        self.errors: list[type] = []
        receiver = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                receiver.connections += 1
                length = 0
                while (line := self.rfile.readline()) not in (b"\r\n", b""):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                self.rfile.read(length)
                try:
                    answer(self.wfile, receiver.stopped)
                except OSError as exc:  # the client hung up
                    receiver.errors.append(type(exc))

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.stopped.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def scripted():
    receivers = []

    def start(answer) -> ScriptedReceiver:
        receivers.append(ScriptedReceiver(answer))
        return receivers[-1]

    yield start
    for receiver in receivers:
        receiver.close()


class PlainReceiver:
    """HTTP/1.1 on 127.0.0.1 (TLS when given a context): records each request's Host header and
    the TLS server name the client asked for, and counts the connections it accepted."""

    def __init__(self, tls: ssl.SSLContext | None = None):
        self.connections = 0
        self.hosts: list[str] = []
        self.server_names: list[str | None] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                receiver.connections += 1

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.hosts.append(self.headers["Host"])
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        if tls is not None:
            tls.sni_callback = lambda sock, name, context: receiver.server_names.append(name)
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def plain_receiver():
    receiver = PlainReceiver()
    yield receiver
    receiver.close()


def test_the_connection_goes_to_the_checked_address_not_to_a_later_answer(
    plain_receiver, monkeypatch
):
    """DNS rebinding: the name resolved to 127.0.0.2 when checked and to 127.0.0.1 (where the
    receiver listens) afterwards. The POST goes to 127.0.0.2, where nothing listens."""
    real_getaddrinfo = socket.getaddrinfo
    checked = []

    def getaddrinfo(host, port, *args, **kwargs):
        if host != NAME:
            return real_getaddrinfo(host, port, *args, **kwargs)
        address = "127.0.0.1" if checked else "127.0.0.2"
        checked.append(address)
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    target = network.target_check(f"http://{NAME}:{plain_receiver.port}/hooks", allow_private=True)
    assert target.address == "127.0.0.2"

    with pytest.raises(network.DeliveryError) as failed:
        _send(target)

    assert str(failed.value) == "connection refused"
    assert plain_receiver.connections == 0


def test_a_target_not_checked_with_private_addresses_allowed_is_refused_at_connect(
    plain_receiver,
):
    """The connection itself is held to the check's rules: an address refused under them is
    not connected to, however the target was made."""
    target = network.Target("http", NAME, plain_receiver.port, "/hooks", "127.0.0.1")

    with pytest.raises(WebhookUrlRefused) as refused:
        _send(target)

    assert refused.value.reason == "it points at a loopback address"
    assert plain_receiver.connections == 0


def test_an_answer_trickling_in_is_cut_at_the_timeout(scripted, monkeypatch):
    """The timeout bounds the whole attempt, not each wait: 30 bytes, one every 0.1 s, take
    3 s, and the attempt ends at 1 s."""

    def trickle(out, stopped):
        out.write(b"HTTP/1.1 200 OK\r\nContent-Length: 30\r\n\r\n")
        out.flush()
        for _ in range(30):
            if stopped.wait(0.1):
                return
            out.write(b"x")
            out.flush()

    receiver = scripted(trickle)
    target = _checked(f"http://{NAME}:{receiver.port}/hooks", monkeypatch)
    started = time.monotonic()

    with pytest.raises(network.DeliveryError) as failed:
        _send(target, timeout=1)

    assert str(failed.value) == "no answer within 1 s"
    assert time.monotonic() - started < 3


def test_a_huge_answer_is_read_only_up_to_the_bound(scripted, monkeypatch):
    """An endless body: the status is taken after at most about MAX_RESPONSE_BYTES of it, and
    that connection, its answer unfinished, is closed rather than kept."""

    def endless(out, stopped):
        out.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"x" * 16384
        while not stopped.is_set():
            out.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))

    receiver = scripted(endless)
    target = _checked(f"http://{NAME}:{receiver.port}/hooks", monkeypatch)

    assert [_send(target, timeout=5), _send(target, timeout=5)] == [200, 200]
    assert receiver.connections == 2


def _certificate(name: str, issuer: tuple | None = None, *, ca: bool = False) -> tuple:
    """A certificate for the host `name` (or a CA's) and its key, signed by `issuer` (a
    certificate and its key) or by itself."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    issuer_certificate, issuer_key = issuer or (None, key)
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer_certificate.subject if issuer_certificate else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
    )
    if ca:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
    else:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), False)
    return builder.sign(issuer_key, hashes.SHA256()), key


def _server_context(tmp_path, certificate, key) -> ssl.SSLContext:
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    return context


@pytest.fixture
def tls_receiver(tmp_path):
    receivers = []

    def start(certificate, key) -> PlainReceiver:
        receivers.append(PlainReceiver(_server_context(tmp_path, certificate, key)))
        return receivers[-1]

    yield start
    for receiver in receivers:
        receiver.close()


@pytest.fixture
def trusted_ca(monkeypatch):
    """A CA the sending client trusts (as a receiver's public CA), for a client made afresh."""
    ca = _certificate("Test CA", ca=True)
    context = ssl.create_default_context(
        cadata=ca[0].public_bytes(serialization.Encoding.PEM).decode()
    )
    monkeypatch.setattr(network, "_tls_context", lambda: context)
    monkeypatch.setattr(network, "_threads", threading.local())
    yield ca
    if hasattr(network._threads, "client"):
        network._threads.client.close()


def test_a_self_signed_certificate_is_refused(tls_receiver, monkeypatch):
    receiver = tls_receiver(*_certificate(NAME))
    target = _checked(f"https://{NAME}:{receiver.port}/hooks", monkeypatch)

    with pytest.raises(network.DeliveryError) as failed:
        _send(target)

    assert str(failed.value) == "TLS failed: CERTIFICATE_VERIFY_FAILED"
    assert receiver.server_names == [NAME]
    assert receiver.hosts == []


def test_tls_is_verified_for_the_urls_host_over_the_checked_address(
    tls_receiver, trusted_ca, monkeypatch
):
    """Connected to 127.0.0.1, the client asks for the URL's host (SNI), verifies the
    certificate against it and sends it as Host; the connection is kept for the next POST."""
    receiver = tls_receiver(*_certificate(NAME, issuer=trusted_ca))
    target = _checked(f"https://{NAME}:{receiver.port}/hooks", monkeypatch)

    assert [_send(target), _send(target)] == [204, 204]

    assert receiver.server_names == [NAME]
    assert receiver.hosts == [f"{NAME}:{receiver.port}"] * 2
    assert receiver.connections == 1


def test_a_certificate_for_another_host_is_refused(tls_receiver, trusted_ca, monkeypatch):
    receiver = tls_receiver(*_certificate("other.example.test", issuer=trusted_ca))
    target = _checked(f"https://{NAME}:{receiver.port}/hooks", monkeypatch)

    with pytest.raises(network.DeliveryError) as failed:
        _send(target)

    assert str(failed.value) == "TLS failed: CERTIFICATE_VERIFY_FAILED"
    assert receiver.hosts == []


def test_a_post_adds_no_log_line(plain_receiver, monkeypatch, caplog):
    """httpx logs every request at INFO: a line per POST in the worker's log, where every
    attempt is already recorded (WebhookAttempt, in the admin)."""
    target = _checked(f"http://{NAME}:{plain_receiver.port}/hooks", monkeypatch)

    with caplog.at_level(logging.INFO):
        assert _send(target) == 204

    assert [(record.name, record.getMessage()) for record in caplog.records] == []
