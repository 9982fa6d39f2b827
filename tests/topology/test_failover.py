"""Automatic failover (deploy/topology/patroni-up.sh): etcd, two Patroni nodes in synchronous
replication and HAProxy choosing by Patroni's REST checks. The leader's postmaster is killed
while a writer commits through HAProxy's write port: writes go on at the other node within
seconds, and every commit that was acknowledged is there. `make failover-check` does the same
under the app's gate load; this is the cluster alone, in under a minute.
"""

import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import psycopg
import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
PORTS = {  # apart from make failover-check's
    "ETCD_PORT": "12479",
    "PATRONI_PG_PORTS": "15521 15522",
    "PATRONI_API_PORTS": "18018 18019",
    "DB_WRITE_PORT": "15520",
    "DB_READ_PORT": "15530",
}
WRITES = f"postgres://postgres@127.0.0.1:{PORTS['DB_WRITE_PORT']}/postgres"
READS = f"postgres://postgres@127.0.0.1:{PORTS['DB_READ_PORT']}/postgres"
MAX_FAILOVER_SECONDS = 30

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def cluster():
    missing = [tool for tool in ("patroni", "etcd", "haproxy") if shutil.which(tool) is None]
    if missing:
        if os.environ.get("REQUIRE_ALL_TESTS"):
            pytest.fail(f"missing {missing} (Debian packages patroni, etcd-server, haproxy)")
        pytest.skip(f"needs {missing} (Debian packages patroni, etcd-server, haproxy)")
    base = Path(tempfile.mkdtemp(prefix="ticketing-failover-test-"))
    base.chmod(0o755)  # the nodes run as the postgres user
    env = {**os.environ, **PORTS, "PATRONI_DIR": str(base / "patroni")}
    try:
        subprocess.run(
            ["deploy/topology/patroni-up.sh"], cwd=ROOT, env=env, check=True, timeout=180
        )
        yield base / "patroni"
    finally:
        subprocess.run(["deploy/topology/patroni-down.sh"], cwd=ROOT, env=env, timeout=180)
        shutil.rmtree(base, ignore_errors=True)


def one(url: str, sql: str, *params):
    with psycopg.connect(url, autocommit=True, connect_timeout=3) as conn:
        cursor = conn.execute(sql, params)
        return cursor.fetchone() if cursor.description else None


def one_settled(url: str, sql: str, *params):
    """`one`, asked again while the balancer's checks still move the port to the new leader (a
    connection may time out there for a moment after the switch)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return one(url, sql, *params)
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


class Writer:
    """Commits one row at a time through the write port, reconnecting after any error; the
    numbers of the rows whose COMMIT was acknowledged, and when the first after `since` was."""

    def __init__(self):
        self.acknowledged: list[tuple[int, float]] = []
        self.failed = 0
        self.stop = threading.Event()

    def run(self) -> None:
        number = 0
        deadline = time.monotonic() + 120
        while not self.stop.is_set() and time.monotonic() < deadline:
            try:
                with psycopg.connect(WRITES, autocommit=True, connect_timeout=3) as conn:
                    while not self.stop.is_set() and time.monotonic() < deadline:
                        number += 1
                        conn.execute("INSERT INTO failover_probe (n) VALUES (%s)", (number,))
                        self.acknowledged.append((number, time.monotonic()))
            except psycopg.Error:
                self.failed += 1
                self.stop.wait(0.1)

    def first_after(self, moment: float) -> float | None:
        return next((at for _, at in self.acknowledged if at > moment), None)


def test_the_leader_killed_writes_go_on_at_the_standby_and_none_is_lost(cluster):
    one(WRITES, "CREATE TABLE failover_probe (n int PRIMARY KEY)")
    assert one(WRITES, "SHOW synchronous_commit") == ("on",)
    assert one(WRITES, "SELECT pg_is_in_recovery()") == (False,)
    assert one(READS, "SELECT pg_is_in_recovery()") == (True,)
    (standby,) = one(WRITES, "SHOW synchronous_standby_names")
    assert standby in ("node1", "node2")

    writer = Writer()
    thread = threading.Thread(target=writer.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while len(writer.acknowledged) < 50:
        assert time.monotonic() < deadline, "no writes before the kill"
        time.sleep(0.05)
    (leader_port,) = one(WRITES, "SELECT current_setting('port')")
    node = {"15521": "node1", "15522": "node2"}[leader_port]
    pid = int((cluster / node / "data" / "postmaster.pid").read_text().split()[0])
    os.kill(pid, signal.SIGKILL)
    killed_at = time.monotonic()
    while writer.first_after(killed_at) is None:
        assert time.monotonic() - killed_at < MAX_FAILOVER_SECONDS + 10, "writes did not resume"
        time.sleep(0.05)
    writer.stop.set()
    thread.join(timeout=30)

    assert writer.first_after(killed_at) - killed_at < MAX_FAILOVER_SECONDS
    assert writer.failed >= 1  # the kill was felt: the connection to the old leader broke
    assert one_settled(WRITES, "SELECT current_setting('port')") != (leader_port,)
    acknowledged = [n for n, _ in writer.acknowledged]
    (stored,) = one_settled(
        WRITES, "SELECT array_agg(n) FROM failover_probe WHERE n = ANY(%s)", acknowledged
    )
    assert sorted(stored) == sorted(acknowledged)
