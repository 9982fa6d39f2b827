"""The SQL the project package writes by hand: server probes the ORM cannot express, each
registered with why (`ticketing.twins`; the mechanism itself is `twins.py`, this module only
uses it).

- `database_answers`: `/healthz`'s round trip to the primary (`SELECT 1`).
- `replica_state_row`: what `db_routing` asks a read replica (recovery, streaming, replay
  position, snapshot horizon, lag), and whether the role may see its replication status.
- `wal_position`: the primary's WAL position after a caller's write (read-your-writes).
"""

from __future__ import annotations

from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections

from .twins import fetch_dict, without_orm_twin

# pg_stat_wal_receiver shows the receiver's status to superusers and pg_read_all_stats members
# only: `privileged` says whether this role is one, else `streaming` is always false.
REPLICA_STATE_SQL = """
    SELECT
        pg_has_role('pg_read_all_stats', 'USAGE') AS privileged,
        pg_is_in_recovery()
            AND EXISTS (SELECT 1 FROM pg_stat_wal_receiver WHERE status = 'streaming')
            AS streaming,
        (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint AS replay_lsn,
        pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS horizon,
        CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
             ELSE COALESCE(EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()), 0)
        END AS lag
"""


@without_orm_twin("a probe of the server itself: `SELECT 1` reads no table, no model to ask")
def database_answers(using: str = DEFAULT_DB_ALIAS) -> bool:
    """Whether the database answers a round trip. Raises: DatabaseError when it does not."""
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT 1 AS one")
        return fetch_dict(cursor)["one"] == 1


@without_orm_twin(
    "replication state from server functions (pg_is_in_recovery, pg_last_wal_replay_lsn, "
    "pg_current_snapshot) and the pg_stat_wal_receiver view: no model, no table of ours"
)
def replica_state_row(alias: str) -> dict[str, Any]:
    """The replica `alias`'s answer to `REPLICA_STATE_SQL`, by column name. Raises:
    DatabaseError when it does not answer."""
    with connections[alias].cursor() as cursor:
        cursor.execute(REPLICA_STATE_SQL)
        return fetch_dict(cursor)


@without_orm_twin("the primary's WAL position is a server function (pg_current_wal_lsn)")
def wal_position() -> int:
    """Bytes of WAL the primary has written. Raises: DatabaseError."""
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint AS lsn")
        return fetch_dict(cursor)["lsn"]
