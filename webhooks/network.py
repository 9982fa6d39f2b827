"""Where a webhook may be sent, and the POST that sends it (CONTRACT §13).

A URL is checked when it is registered and again before every attempt, after DNS resolution,
and the connection goes to the address that was checked (the Host header and TLS name stay the
URL's host), so a name that resolves to a public address for the check and to a private one a
moment later (DNS rebinding) still reaches only the checked address.
"""

import http.client
import ipaddress
import socket
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

from .exceptions import WebhookUrlRefused

MAX_RESPONSE_BYTES = 64 * 1024


def resolve(host: str, port: int) -> list[str]:
    """The addresses `host` resolves to, in the resolver's order. The only DNS lookup here."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


def address_refusal(ip: str) -> str | None:
    """Why an address may not receive webhooks in production, or None if it may."""
    address = ipaddress.ip_address(ip.split("%", 1)[0])
    if address.version == 6 and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
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

    Raises: WebhookUrlRefused (not http(s), https required, credentials in the URL, no host,
    a host that does not resolve, or any resolved address private, loopback, link-local or
    reserved unless `allow_private`).
    """
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
    return Target(parts.scheme, parts.hostname, port, path, addresses[0])


class DeliveryError(Exception):
    """No HTTP answer: refused, timed out, TLS failed, or not HTTP."""


class _PinnedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, target: Target, timeout: float):
        super().__init__(target.host, target.port, timeout=timeout)
        self._address = target.address

    def connect(self):
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, target: Target, timeout: float):
        self._tls = ssl.create_default_context()
        super().__init__(target.host, target.port, timeout=timeout, context=self._tls)
        self._address = target.address

    def connect(self):
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._tls.wrap_socket(sock, server_hostname=self.host)


def post(target: Target, *, body: bytes, headers: dict[str, str], timeout: float) -> int:
    """POST `body` to the checked target's address; the answer's status code.

    Raises: DeliveryError.
    """
    connection_class = _PinnedHTTPSConnection if target.scheme == "https" else _PinnedHTTPConnection
    connection = connection_class(target, timeout)
    try:
        connection.request("POST", target.path, body=body, headers=headers)
        response = connection.getresponse()
        response.read(MAX_RESPONSE_BYTES)  # the receiver's answer is not kept; only its status
        return response.status
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
    finally:
        connection.close()
