"""Whose address per-address limits count (CONTRACT §9): X-Forwarded-For only from a trusted
proxy, read from the right, so a balancer's clients are told apart and none can choose its own."""

import base64
import ipaddress
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from tests.oauth.support import wait_for_fresh_window
from ticketing.api.throttling import TokenRateThrottle, UserRateThrottle
from ticketing.proxies import client_address
from ticketing.settings.env import env_networks

ROOT = Path(__file__).resolve().parent.parent.parent
BALANCER = "10.0.0.2"
INNER = "10.0.0.3"
CLIENT = "203.0.113.7"
OTHER = "198.51.100.20"


@pytest.fixture
def behind_balancer(settings):
    settings.TRUSTED_PROXIES = (ipaddress.ip_network("10.0.0.0/24"),)


def _address(rf, remote_addr, forwarded=None) -> str:
    meta = {"REMOTE_ADDR": remote_addr}
    if forwarded is not None:
        meta["HTTP_X_FORWARDED_FOR"] = forwarded
    return client_address(rf.get("/", **meta))


def test_without_trusted_proxies_the_header_is_ignored(rf, settings):
    assert settings.TRUSTED_PROXIES == ()
    assert _address(rf, CLIENT, OTHER) == CLIENT
    assert _address(rf, BALANCER, CLIENT) == BALANCER


def test_from_a_trusted_proxy_the_forwarded_address_counts(rf, behind_balancer):
    assert _address(rf, BALANCER, CLIENT) == CLIENT
    assert _address(rf, BALANCER, f" {CLIENT} ") == CLIENT


def test_from_anyone_else_the_header_is_ignored(rf, behind_balancer):
    """A client reaching the app directly cannot pose as another client, or as a proxy."""
    assert _address(rf, CLIENT, OTHER) == CLIENT
    assert _address(rf, CLIENT, f"{OTHER}, {BALANCER}") == CLIENT


@pytest.mark.parametrize(
    ("remote_addr", "forwarded", "expected"),
    [
        # The balancer appended to what the client sent: the client's own entries are ignored.
        (BALANCER, f"{OTHER}, {CLIENT}", CLIENT),
        (BALANCER, f"{OTHER}, {BALANCER}, {CLIENT}", CLIENT),
        # Client → edge balancer → inner proxy → app: the edge's entry is skipped.
        (INNER, f"{CLIENT}, {BALANCER}", CLIENT),
        (INNER, f"{OTHER}, {CLIENT}, {BALANCER}", CLIENT),
        # Only proxies: the farthest one.
        (INNER, BALANCER, BALANCER),
        # Headers repeated are joined with commas by the server.
        (BALANCER, f"{OTHER},{CLIENT}", CLIENT),
    ],
)
def test_the_right_most_address_not_a_trusted_proxy_counts(
    rf, behind_balancer, remote_addr, forwarded, expected
):
    assert _address(rf, remote_addr, forwarded) == expected


@pytest.mark.parametrize(
    ("forwarded", "expected"),
    [
        ("", BALANCER),
        ("unknown", BALANCER),
        ("not an address", BALANCER),
        (",,,", BALANCER),
        ("\x00\x01", BALANCER),
        ("203.0.113.256", BALANCER),
        ("[2001:db8::1", BALANCER),
        ("2001:db8::1]:80", BALANCER),
        ("203.0.113.7:http", BALANCER),
        ("x" * 8000, BALANCER),
        ("203.0.113.7, " * 1000 + "garbage", BALANCER),
        # Garbage the client wrote, left of what the balancer appended, is never read.
        (f"garbage, {CLIENT}", CLIENT),
        # Through a proxy that passed a malformed entry, its own address counts.
        (f"{CLIENT}, garbage, {BALANCER}", BALANCER),
        # Ports and brackets, as some balancers write them.
        (f"{CLIENT}:51234", CLIENT),
        ("[2001:db8:1:2::9]:443", "2001:db8:1:2::"),
        ("[2001:db8:1:2::9]", "2001:db8:1:2::"),
    ],
)
def test_malformed_forwarded_values_fall_back_to_the_proxy(
    rf, behind_balancer, forwarded, expected
):
    assert _address(rf, BALANCER, forwarded) == expected


@pytest.mark.parametrize(
    ("remote_addr", "forwarded", "expected"),
    [
        ("2001:db8:1:2:3:4:5:6", None, "2001:db8:1:2::"),  # a host's /64, as one client
        (BALANCER, "2001:db8:1:2:3:4:5:6", "2001:db8:1:2::"),
        ("fe80::1%eth0", None, "fe80::"),
        # A dual-stack socket reports IPv4 peers as IPv4-mapped IPv6 addresses.
        (f"::ffff:{BALANCER}", CLIENT, CLIENT),
        (BALANCER, f"::ffff:{CLIENT}", CLIENT),
        # A peer that is no IP address (a Unix socket) is counted as it is.
        ("", CLIENT, ""),
    ],
)
def test_address_forms(rf, behind_balancer, remote_addr, forwarded, expected):
    assert _address(rf, remote_addr, forwarded) == expected


@pytest.mark.parametrize("throttle", [TokenRateThrottle, UserRateThrottle])
def test_token_less_requests_count_the_same_address(rf, behind_balancer, throttle):
    request = rf.get("/", REMOTE_ADDR=BALANCER, HTTP_X_FORWARDED_FOR=f"{OTHER}, {CLIENT}")
    assert throttle().value(request, None) == f"ip:{CLIENT}"


def _token(application, secret, *, remote_addr, forwarded):
    credentials = base64.b64encode(f"{application.client_id}:{secret}".encode()).decode()
    return Client(REMOTE_ADDR=remote_addr, HTTP_X_FORWARDED_FOR=forwarded).post(
        "/oauth/token",
        {"grant_type": "client_credentials"},
        HTTP_AUTHORIZATION=f"Basic {credentials}",
    )


@pytest.mark.django_db
def test_behind_the_balancer_a_strangers_wrong_secrets_refuse_only_the_stranger(
    application, behind_balancer
):
    wait_for_fresh_window(CLIENT, period=15 * 60)
    statuses = [
        _token(application, "guess", remote_addr=BALANCER, forwarded=CLIENT).status_code
        for _ in range(11)
    ]
    assert statuses == [401] * 10 + [429]

    honest = _token(application, "s3cret", remote_addr=BALANCER, forwarded=OTHER)
    assert honest.status_code == 200, honest.content
    refused = _token(application, "s3cret", remote_addr=BALANCER, forwarded=CLIENT)
    assert (refused.status_code, refused.json()["error"]) == (429, "rate_limited")
    # Malformed headers are the balancer's own address, never a 500.
    odd = _token(application, "s3cret", remote_addr=BALANCER, forwarded="\x7f, [::1")
    assert odd.status_code == 200, odd.content


@pytest.mark.django_db
def test_a_direct_client_cannot_blame_another_address(application, behind_balancer):
    wait_for_fresh_window(CLIENT, period=15 * 60)
    for _ in range(10):
        assert _token(application, "guess", remote_addr=CLIENT, forwarded=OTHER).status_code == 401

    assert _token(application, "s3cret", remote_addr=BALANCER, forwarded=OTHER).status_code == 200
    assert _token(application, "s3cret", remote_addr=CLIENT, forwarded=OTHER).status_code == 429


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", ()),
        ("10.0.0.5", (ipaddress.ip_network("10.0.0.5/32"),)),
        (
            " 10.0.0.0/8 , fd00::/8,192.168.1.7",
            tuple(map(ipaddress.ip_network, ["10.0.0.0/8", "fd00::/8", "192.168.1.7/32"])),
        ),
    ],
)
def test_trusted_proxies_are_read_from_the_environment(monkeypatch, value, expected):
    monkeypatch.setenv("TRUSTED_PROXIES", value)
    assert env_networks("TRUSTED_PROXIES") == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "10.0.0.1/8",
            "TRUSTED_PROXIES must be IP addresses or CIDR blocks, comma-separated; "
            "10.0.0.1/8 has host bits set.",
        ),
        (
            "10.0.0.2, proxy.internal",
            "TRUSTED_PROXIES must be IP addresses or CIDR blocks, comma-separated; "
            "'proxy.internal' does not appear to be an IPv4 or IPv6 network.",
        ),
        (
            "0.0.0.0/0",
            "TRUSTED_PROXIES must not hold 0.0.0.0/0: every address would be trusted, so any "
            "client could choose the address it is counted as.",
        ),
        ("::/0", "TRUSTED_PROXIES must not hold ::/0: every address would be trusted"),
    ],
)
def test_a_bad_trusted_proxies_value_is_refused(monkeypatch, value, message):
    monkeypatch.setenv("TRUSTED_PROXIES", value)
    with pytest.raises(ImproperlyConfigured) as refused:
        env_networks("TRUSTED_PROXIES")
    assert str(refused.value).startswith(message)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "TRUSTED_PROXIES",
            "10.0.0.2;10.0.0.3",
            "TRUSTED_PROXIES must be IP addresses or CIDR blocks, comma-separated; "
            "'10.0.0.2;10.0.0.3' does not appear to be an IPv4 or IPv6 network.",
        ),
        # What deployments set before: ignored, it would bring the lockout back unnoticed.
        (
            "RATELIMIT_IP_META_KEY",
            "HTTP_X_REAL_IP",
            "RATELIMIT_IP_META_KEY is no longer read: set TRUSTED_PROXIES to the addresses of "
            "the proxies in front, whose X-Forwarded-For then gives the client's address.",
        ),
    ],
)
def test_the_server_refuses_to_start_with_a_bad_proxy_setting(name, value, message):
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={
            "PATH": "/usr/bin:/bin",
            "DJANGO_SETTINGS_MODULE": "ticketing.settings.test",
            name: value,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert f"django.core.exceptions.ImproperlyConfigured: {message}" in result.stderr
