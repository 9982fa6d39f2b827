"""A replica the app's role cannot see streaming is never used: it says so (issue 45), in the
log once and on `/healthz`, with the grant that fixes it, instead of failing silently."""

import logging

import psycopg
import pytest
from django.db import connection
from psycopg.rows import dict_row

from ticketing import db_routing
from ticketing.statements import REPLICA_STATE_SQL

pytestmark = pytest.mark.django_db


def _state_row(role: str | None) -> dict:
    """`db_routing`'s state query, as `role` (None: the test's own superuser) on this database."""
    params = connection.get_connection_params()
    if role:
        params = {**params, "user": role, "password": None}
    with psycopg.connect(**params, autocommit=True, row_factory=dict_row) as conn:
        return conn.execute(REPLICA_STATE_SQL).fetchone()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)  # roles are the cluster's: seen by other sessions
def test_the_state_query_tells_a_role_that_cannot_see_replication_status():
    with connection.cursor() as cursor:
        cursor.execute("DROP ROLE IF EXISTS replica_plain_reader")
        cursor.execute("CREATE ROLE replica_plain_reader LOGIN")
    try:
        assert _state_row(None)["privileged"] is True  # a superuser sees it
        assert _state_row("replica_plain_reader")["privileged"] is False
        with connection.cursor() as cursor:
            cursor.execute("GRANT pg_read_all_stats TO replica_plain_reader")
        assert (
            _state_row("replica_plain_reader")["privileged"] is True
        )  # the grant deploy/README gives
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP ROLE replica_plain_reader")


def test_healthz_names_a_replica_that_serves_no_reads_and_why(client, monkeypatch):
    states = iter([(False, False, 0, 0, 0.0), (True, False, 0, 0, 0.0)])

    def state_row(alias, *, max_age):
        privileged, _streaming, lsn, horizon, _lag = next(states)
        return db_routing.ReplicaState(False, True, lsn, horizon, 0.0, privileged=privileged)

    monkeypatch.setattr(db_routing, "replica_aliases", lambda: ["replica"])
    monkeypatch.setattr(db_routing, "replica_state", state_row)

    body = client.get("/healthz").json()
    assert body["status"] == "ok"  # the primary serves its reads
    assert body["replicas"] == {
        "replica": "not used: the role lacks pg_read_all_stats "
        "(GRANT pg_read_all_stats TO <the app's role>)"
    }
    assert client.get("/healthz").json()["replicas"] == {"replica": "lagging or not streaming"}


def test_healthz_has_no_replicas_entry_without_replicas(client):
    assert "replicas" not in client.get("/healthz").json()


def test_a_replica_seen_without_the_privilege_is_logged_once(monkeypatch, caplog):
    """A replica's answer to the state query, read by column name."""
    row = {"privileged": False, "streaming": False, "replay_lsn": 0, "horizon": 0, "lag": 0}
    asked = []

    def state_row(alias):
        asked.append(alias)
        return row

    monkeypatch.setattr(db_routing, "replica_state_row", state_row)
    monkeypatch.setattr(db_routing, "_states", {})
    with caplog.at_level(logging.ERROR, logger="ticketing.db_routing"):
        assert not db_routing.replica_state("replica", max_age=0).usable
        db_routing.replica_state("replica", max_age=0)
    assert asked == ["replica", "replica"]
    assert [r.getMessage() for r in caplog.records] == [
        "replica replica is never used: not used: the role lacks pg_read_all_stats "
        "(GRANT pg_read_all_stats TO <the app's role>)"
    ]
