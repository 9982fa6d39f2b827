"""Whose request this is: the client's address, seen through the proxies we trust.

Per-address limits (CONTRACT §9: credential failures, the token endpoint, token-less API
calls) count it, so it must be one a client cannot choose. Behind a balancer every request
comes from the balancer; the balancer names the client in X-Forwarded-For, and that header is
believed only from a peer in TRUSTED_PROXIES. Anyone else may send one, so from anyone else it
is ignored. Each proxy appends the address it was called from, so the header is read from the
right: the first address that is not itself a trusted proxy is the client (what was written to
its left came from that client, who could have written anything).
"""

from __future__ import annotations

import ipaddress
import re

from django.conf import settings

_Address = ipaddress.IPv4Address | ipaddress.IPv6Address
_IPV6_HOST_BITS = (1 << 64) - 1
# `[IPv6]`, `[IPv6]:port` or `IPv4:port`; an IPv6 address with a port has its brackets.
_WITH_PORT = re.compile(r"\[([0-9A-Fa-f:.]+)\](?::[0-9]{1,5})?|([0-9.]+):[0-9]{1,5}")


def client_address(request) -> str:
    """The address per-address limits count: REMOTE_ADDR, or, when that is a trusted proxy, the
    right-most X-Forwarded-For address that is not; an IPv6 address by its /64 (one host's
    share, as django-ratelimit counts).

    An entry that is not an address stops the walk at the proxy that passed it on: nothing left
    of it can be told apart, and a malformed header never fails the request.
    """
    peer = request.META.get("REMOTE_ADDR") or ""
    address = _parsed(peer)
    if address is None:
        return peer  # not an IP peer (a Unix socket): nothing to look through
    if _trusted(address):
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
        for hop in reversed(forwarded.split(",")):
            hop_address = _parsed(hop)
            if hop_address is None:
                break
            address = hop_address
            if not _trusted(address):
                break
    if address.version == 6:
        return str(ipaddress.IPv6Address(int(address) & ~_IPV6_HOST_BITS))
    return str(address)


def _trusted(address: _Address) -> bool:
    return any(address in network for network in settings.TRUSTED_PROXIES)


def _parsed(text: str) -> _Address | None:
    """An address as proxies write one (`203.0.113.7`, `2001:db8::1`, with a port
    `203.0.113.7:5123` or `[2001:db8::1]:5123`); an IPv4-mapped IPv6 address as its IPv4
    address (a dual-stack socket's peer); None for anything else."""
    text = text.strip()
    with_port = _WITH_PORT.fullmatch(text)
    if with_port is not None:
        text = with_port.group(1) or with_port.group(2)
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if address.version == 6:
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address.scope_id is not None:  # fe80::1%eth0: the zone says nothing of the host
            return ipaddress.IPv6Address(int(address))
    return address
