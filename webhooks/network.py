"""Where a webhook may be sent, and the POST that sends it (CONTRACT §13).

A URL is checked when it is registered and again when delivering (once per task's batch:
`sending`), after DNS resolution, and the connection goes to the address that was checked (the
Host header and TLS name stay the URL's host), so a name that resolves to a public address for
the check and to a private one a moment later (DNS rebinding) still reaches only the checked
address. The POST goes through httpx, over an httpcore pool whose every connection is opened by
`_PinnedBackend`: to the checked address only, held to the check's rules."""

import functools
import ipaddress
import socket
import ssl
import threading
import time
import unicodedata
from dataclasses import dataclass
from http.cookiejar import CookieJar, DefaultCookiePolicy
from urllib.parse import quote, urlsplit

import httpcore
import httpx

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
    # Site-local (fec0::/10) was IPv6's private range until RFC 3879 deprecated it; networks
    # may still route it inside, yet Python counts it global.
    if address.is_private or (address.version == 6 and address.is_site_local):
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
    the one shown), the HTTP client refuses a request line with the others, and none belongs in a
    URL raw (percent-encoded, they are the receiver's data and stay as sent)."""
    return any(unicodedata.category(char) in _HOSTILE_CATEGORIES for char in url)


@dataclass(frozen=True)
class Target:
    """A checked URL: where to connect (`address`) and what to ask for, and whether it was
    checked with private addresses allowed (the connection is held to the same rules)."""

    scheme: str
    host: str
    port: int
    path: str
    address: str
    allow_private: bool = False


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
    # Beyond ASCII, as UTF-8 escapes, as a browser sends it: the request line is ASCII.
    path = quote(path, safe=_REQUEST_LINE_SAFE)
    return Target(parts.scheme, parts.hostname, port, path, addresses[0], allow_private)


class DeliveryError(Exception):
    """No HTTP answer: refused, timed out, TLS failed, or not HTTP."""


# Keep-alive: each sending thread has a client whose pool keeps its idle connections, one per
# URL origin (scheme, host, port), so a receiver that keeps them open costs a TCP (and TLS)
# handshake once, not per POST. The target is still checked before every attempt; a connection
# is opened only to the address checked for the attempt that opens it. An idle connection is
# closed after IDLE_SECONDS, or as soon as the receiver has closed it.
MAX_IDLE_CONNECTIONS = 32
IDLE_SECONDS = 60
_threads = threading.local()


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One context for every client: loading the CA certificates costs more than a POST. The
    system's CA certificates, as `ssl` loads them (not httpx's bundled ones)."""
    return ssl.create_default_context()


@dataclass
class _Attempt:
    """The POST under way on a thread: the only place a connection may be opened to (the
    checked address, for the URL's host as the pool names it), and when it must be over."""

    target: Target
    host: str
    deadline: float
    connected: bool = False

    def time_left(self, timeout: float | None, expired: type[httpcore.TimeoutException]) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise expired("the attempt's time is up")
        return left if timeout is None else min(timeout, left)


class _PinnedBackend(httpcore.SyncBackend):
    """httpcore's sockets, opened only to the attempt's checked address (no DNS lookup here;
    the URL's host stays the Host header and the TLS name), and only if the check's rules let
    that address receive webhooks: a name that resolves elsewhere now (DNS rebinding) is not
    looked up again, and a target made some other way is held to the rules too."""

    def __init__(self):
        self.attempt: _Attempt | None = None

    def time_left(self, timeout, expired):
        return timeout if self.attempt is None else self.attempt.time_left(timeout, expired)

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        attempt = self.attempt
        if attempt is None or (host, port) != (attempt.host, attempt.target.port):
            raise httpcore.ConnectError(f"{host}:{port} is not the checked target")
        target = attempt.target
        reason = None if target.allow_private else address_refusal(target.address)
        if reason is not None:
            raise WebhookUrlRefused(reason)
        timeout = attempt.time_left(timeout, httpcore.ConnectTimeout)
        stream = super().connect_tcp(target.address, port, timeout, local_address, socket_options)
        attempt.connected = True
        return _TimedStream(stream, self)


class _TimedStream(httpcore.NetworkStream):
    """A connection whose every wait ends by the deadline of the POST under way: the timeout
    bounds the whole attempt, so a receiver trickling its answer gets no more time. What is
    written is kept until the answer is read: a request's head and body go out in one system
    call and segment (no body held back by Nagle's algorithm behind a head sent alone)."""

    def __init__(self, stream: httpcore.NetworkStream, backend: _PinnedBackend):
        self._stream, self._backend = stream, backend
        self._unsent: list[bytes] = []

    def read(self, max_bytes, timeout=None):
        if self._unsent:  # the request, whole
            buffer, self._unsent = b"".join(self._unsent), []
            self._stream.write(buffer, self._backend.time_left(None, httpcore.WriteTimeout))
        return self._stream.read(max_bytes, self._backend.time_left(timeout, httpcore.ReadTimeout))

    def write(self, buffer, timeout=None):
        self._unsent.append(buffer)

    def close(self):
        self._stream.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None):
        timeout = self._backend.time_left(timeout, httpcore.ConnectTimeout)
        return _TimedStream(
            self._stream.start_tls(ssl_context, server_hostname, timeout), self._backend
        )

    def get_extra_info(self, info):
        return self._stream.get_extra_info(info)


class _PinnedTransport(httpx.BaseTransport):
    """httpx's transport API over an httpcore pool on `_PinnedBackend` (httpx's HTTPTransport
    takes no network backend). The request line's target is the checked path as it is."""

    def __init__(self):
        self.backend = _PinnedBackend()
        self._pool = httpcore.ConnectionPool(
            ssl_context=_tls_context(),
            max_connections=MAX_IDLE_CONNECTIONS,
            max_keepalive_connections=MAX_IDLE_CONNECTIONS,
            keepalive_expiry=IDLE_SECONDS,
            network_backend=self.backend,
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        response = self._pool.handle_request(
            httpcore.Request(
                method=request.method,
                url=httpcore.URL(
                    scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path
                ),
                headers=request.headers.raw,
                content=request.stream,
                extensions=request.extensions,
            )
        )
        return httpx.Response(
            response.status,
            headers=response.headers,
            stream=_Body(response.stream),
            extensions=response.extensions,
        )

    def close(self):
        self._pool.close()


class _Body(httpx.SyncByteStream):
    def __init__(self, stream):
        self._stream = stream

    def __iter__(self):
        return iter(self._stream)

    def close(self):
        self._stream.close()


def _client() -> tuple[httpx.Client, _PinnedBackend]:
    """This thread's client: no redirects followed, nothing from the environment (proxies,
    .netrc credentials), no cookie kept from one receiver's answer to the next POST, and no
    compressed answer asked for (it is never decoded)."""
    if not hasattr(_threads, "client"):
        transport = _PinnedTransport()
        _threads.backend = transport.backend
        _threads.client = httpx.Client(
            transport=transport,
            follow_redirects=False,
            trust_env=False,
            cookies=CookieJar(DefaultCookiePolicy(allowed_domains=[])),
            headers={"Accept-Encoding": "identity"},
        )
    return _threads.client, _threads.backend


def post(target: Target, *, body: bytes, headers: dict[str, str], timeout: float) -> int:
    """POST `body` to the checked target's address; the answer's status code. `timeout` bounds
    the whole attempt: connecting, TLS, sending and reading the answer.

    Over a kept-alive connection when this thread's client has one to the URL's origin. If that
    connection turns out dropped (the receiver closed it while idle: reset, or closed before
    answering), the POST is sent once more on a new connection. The receiver may then get it
    twice, if it closed after reading it; it deduplicates by `webhook-id` (Standard Webhooks),
    as after any retry, and the body and headers are the same bytes.

    Raises: DeliveryError; WebhookUrlRefused if the checked address may not receive webhooks
    under the check's rules (a target not made by `target_check`).
    """
    client, backend = _client()
    try:
        url = httpx.URL(scheme=target.scheme, host=target.host, port=target.port)
    except httpx.InvalidURL as exc:
        raise DeliveryError(f"connection failed: {exc}") from None
    request = client.build_request(
        "POST",
        url,
        content=body,
        headers=headers,
        timeout=timeout,
        extensions={"target": target.path.encode("ascii")},
    )
    attempt = _Attempt(target, url.raw_host.decode("ascii"), time.monotonic() + timeout)
    backend.attempt = attempt
    try:
        try:
            return _exchange(client, request)
        except (httpcore.RemoteProtocolError, httpcore.ReadError, httpcore.WriteError):
            if attempt.connected:
                raise
            return _exchange(client, request)  # dropped while idle: once more, on a new one
    except httpcore.TimeoutException:
        raise DeliveryError(f"no answer within {timeout:g} s") from None
    except httpcore.ProtocolError as exc:
        raise DeliveryError(f"not an HTTP answer ({exc})") from None
    except httpcore.NetworkError as exc:
        cause = _os_error(exc)
        if isinstance(cause, ConnectionRefusedError):
            raise DeliveryError("connection refused") from None
        if isinstance(cause, ssl.SSLError):
            raise DeliveryError(f"TLS failed: {cause.reason or cause}") from None
        raise DeliveryError(f"connection failed: {(cause and cause.strerror) or exc}") from None
    finally:
        backend.attempt = None


def _exchange(client: httpx.Client, request: httpx.Request) -> int:
    """One request and its answer, of which at most about MAX_RESPONSE_BYTES are read (only its
    status matters). The connection is kept for the next POST if the whole answer was read and
    both ends may reuse it, else closed."""
    response = client.send(request, stream=True)
    try:
        read = 0
        for chunk in response.iter_raw():
            read += len(chunk)
            if read > MAX_RESPONSE_BYTES:
                break
    finally:
        response.close()
    return response.status_code


def _os_error(exc: BaseException | None) -> OSError | None:
    """The operating system's error behind an httpcore one, which httpcore raises from it."""
    while exc is not None and not isinstance(exc, OSError):
        exc = exc.__cause__ or exc.__context__
    return exc
