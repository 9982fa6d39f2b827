#!/bin/sh
# Stops what deploy/topology/patroni-up.sh started (HAProxy, the Patroni nodes with their
# PostgreSQL, etcd; by the process ids it wrote) and removes its directory, data included.
set -u
cd "$(dirname "$0")/../.."
dir="${PATRONI_DIR:-/tmp/ticketing-patroni}"
[ -d "$dir" ] || exit 0

stop_pid() {
    kill -TERM "$1" 2>/dev/null || return 0
    for _ in $(seq 1 300); do
        kill -0 "$1" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$1" 2>/dev/null || true
}

[ -f "$dir/haproxy.pid" ] && stop_pid "$(cat "$dir/haproxy.pid")"
# Patroni stops its PostgreSQL on SIGTERM: the nodes at once, then etcd (the first pid).
if [ -f "$dir/pids" ]; then
    nodes="$(sed 1d "$dir/pids")"
    for pid in $nodes; do stop_pid "$pid" & done
    wait
    stop_pid "$(sed -n 1p "$dir/pids")"
fi
# A PostgreSQL whose Patroni was killed keeps running: stop it by its own pid file.
for pidfile in "$dir"/node*/data/postmaster.pid; do
    [ -f "$pidfile" ] && stop_pid "$(head -n 1 "$pidfile")"
done
rm -rf "$dir"
echo "patroni: down"
