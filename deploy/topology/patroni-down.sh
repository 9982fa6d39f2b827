#!/bin/sh
# Stops what deploy/topology/patroni-up.sh started (HAProxy, the Patroni nodes with their
# PostgreSQL, etcd; by the process ids it wrote) and removes its directory, data included.
set -u
cd "$(dirname "$0")/../.."
dir="${PATRONI_DIR:-/tmp/ticketing-patroni}"
[ -d "$dir" ] || exit 0

. deploy/topology/stopping.sh

[ -f "$dir/haproxy.pid" ] && stop_pid "$(cat "$dir/haproxy.pid")" 30
# Patroni stops its PostgreSQL on SIGTERM: the nodes at once, then etcd (the first pid).
if [ -f "$dir/pids" ]; then
    nodes="$(sed 1d "$dir/pids")"
    for pid in $nodes; do stop_pid "$pid" 30 & done
    wait
    stop_pid "$(sed -n 1p "$dir/pids")" 30
fi
# A PostgreSQL whose Patroni was killed keeps running: stop it by its own pid file.
for pidfile in "$dir"/node*/data/postmaster.pid; do
    [ -f "$pidfile" ] && stop_pid "$(head -n 1 "$pidfile")" 30
done
rm -rf "$dir"
echo "patroni: down"
