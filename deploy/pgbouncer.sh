#!/bin/sh
# PgBouncer in transaction pooling mode in front of one PostgreSQL, from a configuration written
# under a directory of its own (never the system's /etc/pgbouncer):
#
#   deploy/pgbouncer.sh start DIR [PORT] [UPSTREAM_PORT]   # default 6432, in front of 5432
#   deploy/pgbouncer.sh stop DIR
#
# The app then connects to 127.0.0.1:PORT with DB_TRANSACTION_POOLER=true (ticketing.settings:
# no prepared statements, no server-side cursors, no startup options). Every database name is
# passed through to the same name upstream. Trust authentication on loopback, as the server
# behind it is configured here; a deployment sets auth_type and an auth_file.
set -eu
action="${1:?start|stop}"
dir="${2:?directory for the configuration, pid and log}"
port="${3:-6432}"
upstream="${4:-5432}"
pool_size="${PGBOUNCER_POOL_SIZE:-20}"
# The statement time limit production sets per connection (DB_STATEMENT_TIMEOUT_MS) is set by
# the pooler on its server connections instead: PgBouncer refuses a client's `options`.
timeout_ms="${DB_STATEMENT_TIMEOUT_MS:-15000}"

case "$action" in
start)
    mkdir -p "$dir"
    cat >"$dir/pgbouncer.ini" <<INI
[databases]
* = host=127.0.0.1 port=$upstream connect_query='SET statement_timeout = $timeout_ms'

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $dir/userlist.txt
pool_mode = transaction
default_pool_size = $pool_size
max_client_conn = 1000
server_reset_query =
ignore_startup_parameters = extra_float_digits
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
admin_users = postgres
INI
    echo '"postgres" ""' >"$dir/userlist.txt"
    user_option=
    if [ "$(id -u)" = 0 ]; then
        chown -R postgres "$dir"  # PgBouncer does not run as root
        user_option="-u postgres"
    fi
    # shellcheck disable=SC2086
    pgbouncer -d $user_option "$dir/pgbouncer.ini"
    for _ in $(seq 1 50); do
        pg_isready -q -h 127.0.0.1 -p "$port" && exit 0
        sleep 0.1
    done
    echo "pgbouncer: not ready on port $port; see $dir/pgbouncer.log" >&2
    exit 1
    ;;
stop)
    if [ -f "$dir/pgbouncer.pid" ]; then
        pid="$(cat "$dir/pgbouncer.pid")"
        kill -INT "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || exit 0
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    ;;
*)
    echo "usage: $0 start|stop DIR [PORT] [UPSTREAM_PORT]" >&2
    exit 2
    ;;
esac
