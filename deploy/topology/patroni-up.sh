#!/bin/sh
# A PostgreSQL cluster with automatic failover, on one machine: one etcd, two Patroni-managed
# PostgreSQL nodes (a leader and a synchronous standby) and HAProxy in front, sending writes to
# the leader and reads to the replica by Patroni's REST health checks. It is a cluster of its
# own, in a directory of its own: the machine's PostgreSQL on 5432 is never touched.
# deploy/topology/patroni-down.sh stops it all and removes the directory.
#
#   PATRONI_DIR=/tmp/ticketing-patroni deploy/topology/patroni-up.sh
#
# Settings, from the environment (all on 127.0.0.1):
#   ETCD_PORT (12379; its peer port is the next one), PATRONI_PG_PORTS ("15501 15502"),
#   PATRONI_API_PORTS ("18008 18009"), DB_WRITE_PORT (15500: HAProxy to the leader),
#   DB_READ_PORT (15510: HAProxy to the replica), PATRONI_SCOPE (ticketing), PATRONI_DATABASE
#   (created when set), PG_BIN_DIR (the newest /usr/lib/postgresql/*/bin).
# The app then uses DATABASE_URL=postgres://postgres@127.0.0.1:$DB_WRITE_PORT/<db> and
# DATABASE_REPLICA_URLS=postgres://postgres@127.0.0.1:$DB_READ_PORT/<db> (written to $dir/env).
set -eu
cd "$(dirname "$0")/../.."
dir="${PATRONI_DIR:-/tmp/ticketing-patroni}"
etcd_port="${ETCD_PORT:-12379}"
pg_ports="${PATRONI_PG_PORTS:-15501 15502}"
api_ports="${PATRONI_API_PORTS:-18008 18009}"
write_port="${DB_WRITE_PORT:-15500}"
read_port="${DB_READ_PORT:-15510}"
scope="${PATRONI_SCOPE:-ticketing}"
bin_dir="${PG_BIN_DIR:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)}"

if [ -e "$dir/pids" ]; then
    echo "patroni: already up in $dir (deploy/topology/patroni-down.sh first)" >&2
    exit 1
fi
for tool in etcd patroni haproxy curl; do
    command -v "$tool" >/dev/null || {
        echo "patroni: $tool is missing (apt-get install etcd-server patroni haproxy curl)" >&2
        exit 1
    }
done
mkdir -p "$dir"
: >"$dir/pids"
trap 'echo "patroni: start failed; stopping what started (logs in $dir)" >&2; PATRONI_DIR="$dir" deploy/topology/patroni-down.sh' EXIT

# PostgreSQL refuses to run as root: Patroni (and so its PostgreSQL) runs as postgres. A
# command prefix, not a function: a function run in the background is a subshell, whose pid
# is not the process's.
as_postgres=
if [ "$(id -u)" = 0 ]; then
    as_postgres="setpriv --reuid=postgres --regid=postgres --init-groups --reset-env --"
fi
[ "$(id -u)" = 0 ] && chown postgres "$dir"

wait_for() {  # wait_for SECONDS WHAT COMMAND...: until COMMAND succeeds, or fail
    seconds="$1" what="$2"
    shift 2
    deadline=$(($(date +%s) + seconds))
    until "$@" >/dev/null 2>&1; do
        if [ "$(date +%s)" -ge "$deadline" ]; then
            echo "patroni: $what not reached in ${seconds}s" >&2
            exit 1
        fi
        sleep 0.2
    done
}

$as_postgres setsid etcd --name "$scope-etcd" --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" \
    --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$((etcd_port + 1))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((etcd_port + 1))" \
    --initial-cluster "$scope-etcd=http://127.0.0.1:$((etcd_port + 1))" \
    --listen-metrics-urls "" >"$dir/etcd.log" 2>&1 &
echo "$!" >>"$dir/pids"
wait_for 60 "etcd on $etcd_port" curl -sf "http://127.0.0.1:$etcd_port/health"

# The nodes, the first alone until it leads (so that it is the one that runs initdb).
set -- $api_ports
primary_servers=
replica_servers=
number=1
for pg_port in $pg_ports; do
    api_port="$1"
    shift
    name="node$number"
    mkdir -p "$dir/$name"
    sed -e "s|@SCOPE@|$scope|g" -e "s|@NAME@|$name|g" -e "s|@API_PORT@|$api_port|g" \
        -e "s|@PG_PORT@|$pg_port|g" -e "s|@ETCD_PORT@|$etcd_port|g" -e "s|@DIR@|$dir|g" \
        -e "s|@BIN_DIR@|$bin_dir|g" deploy/topology/patroni.yml.in >"$dir/$name/patroni.yml"
    [ "$(id -u)" = 0 ] && chown -R postgres "$dir/$name"
    $as_postgres setsid patroni "$dir/$name/patroni.yml" >"$dir/$name/patroni.log" 2>&1 &
    echo "$!" >>"$dir/pids"
    echo "$name $pg_port $api_port" >>"$dir/nodes"
    if [ "$number" = 1 ]; then
        wait_for 120 "$name leading" curl -sf "http://127.0.0.1:$api_port/primary"
    else
        wait_for 120 "$name replicating" curl -sf "http://127.0.0.1:$api_port/replica"
    fi
    primary_servers="$primary_servers    server $name 127.0.0.1:$pg_port check port $api_port\n"
    replica_servers="$replica_servers    server $name 127.0.0.1:$pg_port check port $api_port\n"
    number=$((number + 1))
done
# Commits wait for a synchronous standby from here on.
first_api="$(awk 'NR == 1 {print $3}' "$dir/nodes")"
wait_for 60 "a synchronous standby" sh -c \
    "curl -sf http://127.0.0.1:$first_api/cluster | grep -q '\"role\": *\"sync_standby\"'"

sed -e "s|@DIR@|$dir|g" -e "s|@WRITE_PORT@|$write_port|g" -e "s|@READ_PORT@|$read_port|g" \
    -e "s|@PRIMARY_SERVERS@|$primary_servers|" -e "s|@REPLICA_SERVERS@|$replica_servers|" \
    deploy/topology/haproxy-patroni.cfg.in >"$dir/haproxy.cfg"
haproxy -D -f "$dir/haproxy.cfg"
wait_for 30 "the leader through HAProxy" \
    sh -c "psql -h 127.0.0.1 -p $write_port -U postgres -d postgres -tAc 'select pg_is_in_recovery()' | grep -q f"
wait_for 30 "the replica through HAProxy" \
    sh -c "psql -h 127.0.0.1 -p $read_port -U postgres -d postgres -tAc 'select pg_is_in_recovery()' | grep -q t"

database="${PATRONI_DATABASE:-}"
if [ -n "$database" ]; then
    psql -h 127.0.0.1 -p "$write_port" -U postgres -d postgres -qc "create database \"$database\""
fi
cat >"$dir/env" <<ENV
DATABASE_URL=postgres://postgres@127.0.0.1:$write_port/${database:-postgres}
DATABASE_REPLICA_URLS=postgres://postgres@127.0.0.1:$read_port/${database:-postgres}
PATRONI_API_PORTS=$api_ports
PATRONI_PG_PORTS=$pg_ports
PATRONI_DIR=$dir
PG_BIN_DIR=$bin_dir
ENV
trap - EXIT
echo "patroni: up; writes 127.0.0.1:$write_port, reads 127.0.0.1:$read_port (state in $dir)"
