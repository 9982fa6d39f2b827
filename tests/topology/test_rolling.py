"""deploy/topology's balancer around a restart: a drained host gets no new request, and
deploy/topology/rolling-restart.sh replaces both app hosts while every request through the
balancer is answered."""

import http.client
import socket
import subprocess
import threading

import pytest
from django.conf import settings
from django.db import connection

from .stack import ROOT, Stack

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

REQUESTS = 20
MAX_REQUESTS = 5000  # the load during a restart stops here at the latest


@pytest.fixture(scope="module")
def stack(django_db_setup, django_db_blocker):
    topology = Stack(connection.settings_dict["NAME"], settings.REDIS_URL, replica=False)
    try:
        topology.up()
        yield topology
    finally:
        topology.down()


def balancer(stack: Stack, command: str) -> str:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(str(stack.dir / "stack" / "haproxy.sock"))
        sock.sendall(command.encode() + b"\n")
        return sock.makefile().read()


def sessions_so_far(stack: Stack) -> dict[str, int]:
    """Requests each app host has been sent by the balancer since it started (`stot`)."""
    rows = [line.split(",") for line in balancer(stack, "show stat").splitlines()[1:]]
    return {row[1]: int(row[7]) for row in rows if row and row[0] == "app" and row[1] != "BACKEND"}


def healthz(stack: Stack) -> int:
    conn = http.client.HTTPConnection(*stack.balancer, timeout=30)
    try:
        conn.request("GET", "/healthz", headers={"Host": "127.0.0.1"})
        response = conn.getresponse()
        response.read()
        return response.status
    except OSError:
        return 0
    finally:
        conn.close()


def masters(stack: Stack) -> list[str]:
    return [(stack.dir / "stack" / f"app-{n}.pid").read_text() for n in (11, 12)]


def test_a_drained_host_gets_no_new_request(stack):
    balancer(stack, "set server app/host11 state drain")
    try:
        before = sessions_so_far(stack)
        statuses = [healthz(stack) for _ in range(REQUESTS)]
        assert statuses == [200] * REQUESTS, (statuses, balancer(stack, "show stat"))
        # The balancer counts a request once it is over: the last ones may be a moment behind.
        Stack.wait_for(lambda: sessions_so_far(stack)["host12"] == before["host12"] + REQUESTS)
        after = sessions_so_far(stack)
    finally:
        balancer(stack, "set server app/host11 state ready")

    assert after["host11"] == before["host11"]


def test_a_rolling_restart_answers_every_request(stack):
    old = masters(stack)
    statuses: list[int] = []
    done = threading.Event()

    def load():
        while not done.is_set() and len(statuses) < MAX_REQUESTS:
            statuses.append(healthz(stack))

    client = threading.Thread(target=load)
    client.start()
    try:
        subprocess.run(
            ["deploy/topology/rolling-restart.sh"], cwd=ROOT, env=stack.env, check=True, timeout=240
        )
    finally:
        done.set()
        client.join()

    new = masters(stack)
    assert new[0] != old[0] and new[1] != old[1]
    assert len(statuses) > REQUESTS
    assert set(statuses) == {200}
