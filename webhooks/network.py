"""Where a webhook may be sent, and the POST that sends it (CONTRACT §13).

A URL is checked when it is registered and again before every attempt, after DNS resolution,
and the connection goes to the address that was checked (the Host header and TLS name stay the
URL's host), so a name that resolves to a public address for the check and to a private one a
moment later (DNS rebinding) still reaches only the checked address.
"""

import functools
import http.client
import ipaddress
import select
import socket
import ssl
import threading
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from .exceptions import WebhookUrlRefused

MAX_RESPONSE_BYTES = 64 * 1024


def resolve(host: str, port: int) -> list[str]:
    """The addresses `host` resolves to, in the resolver's order. The only DNS lookup here."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


# NAT64's well-known prefix (RFC 6052): what a DNS64 resolver answers for an IPv4-only host.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# Blocks whose addresses carry an IPv4 address in their last 32 bits: NAT64's, its local-use
# prefix (RFC 8215), and the deprecated IPv4-compatible addresses (RFC 4291).
_LAST_32_BITS_IPV4 = (_NAT64, ipaddress.ip_network("64:ff9b:1::/48"), ipaddress.ip_network("::/96"))


def _embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address stands for, by the IPv6 transition mechanisms: the
    packets of a 6to4, Teredo, NAT64 or IPv4-compatible address end up at those."""
    embedded = []
    if address.sixtofour is not None:  # 2002::/16, bits 16..48
        embedded.append(address.sixtofour)
    if address.teredo is not None:  # 2001::/32: the server, and the client (XORed)
        embedded.extend(address.teredo)
    # Not :: or ::1, which are judged as what they are.
    if int(address) > 1 and any(address in block for block in _LAST_32_BITS_IPV4):
        embedded.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return embedded


def _class_refusal(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    if address.is_loopback:
        return "it points at a loopback address"
    if address.is_link_local:
        return "it points at a link-local address"
    if address.is_private:
        return "it points at a private address"
    if (
        not address.is_global
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
    ):
        return "it points at a reserved address"
    return None


def address_refusal(ip: str) -> str | None:
    """Why an address may not receive webhooks in production, or None if it may.

    An IPv6 address that carries an IPv4 address is judged by it first: an IPv4-mapped address
    and one of NAT64's well-known prefix are that IPv4 address (the host, or the NAT64 gateway,
    translates), so a public one is accepted; 6to4, Teredo, IPv4-compatible and local-use NAT64
    addresses are refused for a refused IPv4 address and then judged as IPv6 addresses too.
    """
    address = ipaddress.ip_address(ip.split("%", 1)[0])
    if address.version == 6 and address.ipv4_mapped is not None:
        return _class_refusal(address.ipv4_mapped)
    if address.version == 6:
        for embedded in _embedded_ipv4(address):
            reason = _class_refusal(embedded)
            if reason is not None:
                return reason
        if address in _NAT64:
            return None
    return _class_refusal(address)


# Cc: C0, DEL and C1 controls; Cf: invisible format characters (zero-width, bidi overrides);
# Cs: lone surrogates (not encodable); Zs, Zl, Zp: spaces and the line and paragraph separators.
_HOSTILE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zs", "Zl", "Zp"})

# What the request line carries as it is: printable ASCII (with `%XX` escapes already in it).
_REQUEST_LINE_SAFE = "".join(chr(c) for c in range(0x21, 0x7F))


def _hostile_character(url: str) -> bool:
    """Whitespace, control, format or line-separator characters, anywhere: urlsplit silently
    drops tab, CR and LF and strips leading C0 controls and spaces (so the URL used would not be
    the one shown), http.client refuses a request line with the others, and none belongs in a
    URL raw (percent-encoded, they are the receiver's data and stay as sent)."""
    return any(unicodedata.category(char) in _HOSTILE_CATEGORIES for char in url)


@dataclass(frozen=True)
class Target:
    """A checked URL: where to connect (`address`) and what to ask for."""

    scheme: str
    host: str
    port: int
    path: str
    address: str


def target_check(url: str, *, allow_private: bool) -> Target:
    """The URL's target if webhooks may go there.

    Raises: WebhookUrlRefused (whitespace or a control character, not http(s), https
    required, credentials in the URL, no host, port 0, a host that does not resolve, or any
    resolved address private, loopback, link-local or reserved unless `allow_private`).
    """
    if _hostile_character(url):
        raise WebhookUrlRefused("it contains whitespace or a control character")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise WebhookUrlRefused("it is not a valid URL") from None
    schemes = ("https", "http") if allow_private else ("https",)
    if parts.scheme not in schemes:
        raise WebhookUrlRefused("it must be an https URL")
    if not parts.hostname:
        raise WebhookUrlRefused("it has no host")
    if parts.username is not None or parts.password is not None:
        raise WebhookUrlRefused("it must not contain credentials")
    if port == 0:  # urlsplit accepts it; `or` below would have made it the default port
        raise WebhookUrlRefused("its port must be from 1 to 65535")
    port = port or (443 if parts.scheme == "https" else 80)
    try:
        addresses = resolve(parts.hostname, port)
    except (OSError, UnicodeError):
        raise WebhookUrlRefused("its host name does not resolve") from None
    if not addresses:
        raise WebhookUrlRefused("its host name does not resolve")
    if not allow_private:
        for address in addresses:
            reason = address_refusal(address)
            if reason is not None:
                raise WebhookUrlRefused(reason)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    # Beyond ASCII, as UTF-8 escapes, as a browser sends it: http.client sends ASCII only.
    path = quote(path, safe=_REQUEST_LINE_SAFE)
    return Target(parts.scheme, parts.hostname, port, path, addresses[0])


class DeliveryError(Exception):
    """No HTTP answer: refused, timed out, TLS failed, or not HTTP."""


def _connect(address: str, port: int, timeout: float) -> socket.socket:
    """A TCP connection to the checked address, without Nagle's delay (as http.client's own):
    a kept-alive connection's next request would otherwise wait for the receiver's delayed ACK."""
    sock = socket.create_connection((address, port), timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class _PinnedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, target: Target, timeout: float):
        super().__init__(target.host, target.port, timeout=timeout)
        self._address = target.address

    def connect(self):
        self.sock = _connect(self._address, self.port, self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, target: Target, timeout: float):
        super().__init__(target.host, target.port, timeout=timeout, context=_tls_context())
        self._address = target.address

    def connect(self):
        sock = _connect(self._address, self.port, self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One context for every connection: loading the CA certificates costs more than a POST."""
    return ssl.create_default_context()


# Keep-alive: each sending thread keeps its open connections, one per pinned target (scheme,
# checked address, port, host), so a receiver that keeps them open costs a TCP (and TLS)
# handshake once, not per POST. The target is still checked before every attempt: a name that
# now resolves elsewhere gets a connection of its own.
MAX_IDLE_CONNECTIONS = 32
_idle = threading.local()


def _connections() -> OrderedDict:
    if not hasattr(_idle, "connections"):
        _idle.connections = OrderedDict()
    return _idle.connections


def _dropped(connection: http.client.HTTPConnection) -> bool:
    """Whether the peer closed an idle connection (or sent unasked-for bytes): it is readable."""
    poller = select.poll()
    poller.register(connection.sock, select.POLLIN)
    return bool(poller.poll(0))


def _idle_connection(key: tuple, timeout: float) -> http.client.HTTPConnection | None:
    connection = _connections().pop(key, None)
    if connection is None:
        return None
    if connection.sock is None or _dropped(connection):
        connection.close()
        return None
    connection.timeout = timeout
    connection.sock.settimeout(timeout)
    return connection


def post(target: Target, *, body: bytes, headers: dict[str, str], timeout: float) -> int:
    """POST `body` to the checked target's address; the answer's status code.

    Over a kept-alive connection when this thread has one to the target. If that connection
    turns out dropped (the receiver closed it while idle: reset, or closed before answering),
    the POST is sent once more on a new connection. The receiver may then get it twice, if it
    closed after reading it; it deduplicates by `webhook-id` (Standard Webhooks), as after any
    retry, and the body and headers are the same bytes.

    Raises: DeliveryError.
    """
    key = (target.scheme, target.address, target.port, target.host)
    try:
        reused = _idle_connection(key, timeout)
        if reused is not None:
            try:
                return _exchange(reused, key, target, body, headers)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                pass  # dropped while idle: once more, on a new connection
        connection_class = (
            _PinnedHTTPSConnection if target.scheme == "https" else _PinnedHTTPConnection
        )
        return _exchange(connection_class(target, timeout), key, target, body, headers)
    except TimeoutError:
        raise DeliveryError(f"no answer within {timeout:g} s") from None
    except ConnectionRefusedError:
        raise DeliveryError("connection refused") from None
    except ssl.SSLError as exc:
        raise DeliveryError(f"TLS failed: {exc.reason or exc}") from None
    except http.client.HTTPException as exc:
        raise DeliveryError(f"not an HTTP answer ({exc.__class__.__name__})") from None
    except OSError as exc:
        raise DeliveryError(f"connection failed: {exc.strerror or exc}") from None


def _exchange(
    connection: http.client.HTTPConnection,
    key: tuple,
    target: Target,
    body: bytes,
    headers: dict[str, str],
) -> int:
    """One request and its answer. The connection is kept for the next POST if both ends may
    reuse it (the whole answer read, no `Connection: close`), else closed."""
    try:
        connection.request("POST", target.path, body=body, headers=headers)
        response = connection.getresponse()
        response.read(MAX_RESPONSE_BYTES)  # the receiver's answer is not kept; only its status
    except BaseException:
        connection.close()
        raise
    if response.isclosed() and not response.will_close and connection.sock is not None:
        connections = _connections()
        connections[key] = connection
        while len(connections) > MAX_IDLE_CONNECTIONS:
            connections.popitem(last=False)[1].close()
    else:
        connection.close()
    return response.status
