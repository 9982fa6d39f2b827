#!/bin/sh
# A streaming read replica of the PostgreSQL on 127.0.0.1:PRIMARY_PORT, as a hot standby in a
# directory of its own (never a cluster of the system's):
#
#   deploy/topology/replica.sh start DIR [PORT] [PRIMARY_PORT]   # default 5433, of 5432
#   deploy/topology/replica.sh stop DIR                          # stops it and removes DIR
#
# pg_basebackup copies the primary and writes standby.signal with its primary_conninfo (-R).
# The primary must accept replication connections from 127.0.0.1 (a `host replication` line in
# its pg_hba.conf) and have wal_level=replica (PostgreSQL's default).
set -eu
action="${1:?start|stop}"
dir="${2:?directory for the replica}"
port="${3:-5433}"
primary="${4:-5432}"
bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
as_postgres() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$action" in
start)
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    as_postgres "$bin/pg_basebackup" -h 127.0.0.1 -p "$primary" -U postgres -D "$dir/data" \
        -R -X stream -c fast
    # Debian keeps the primary's configuration outside its data directory: the replica's own.
    cat >"$dir/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
max_connections = 100
hot_standby = on
# Ask the primary to keep the rows a replica query still reads, rather than cancel the query.
hot_standby_feedback = on
CONF
    printf 'local all all trust\nhost all all 127.0.0.1/32 trust\n' >"$dir/data/pg_hba.conf"
    [ "$(id -u)" = 0 ] && chown postgres "$dir/data/postgresql.conf" "$dir/data/pg_hba.conf"
    as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w start >/dev/null
    ;;
stop)
    if [ -f "$dir/data/postmaster.pid" ]; then
        as_postgres "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
    fi
    rm -rf "$dir"
    ;;
*)
    echo "usage: $0 start|stop DIR [PORT] [PRIMARY_PORT]" >&2
    exit 2
    ;;
esac
