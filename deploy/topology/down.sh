#!/bin/sh
# Stops what deploy/topology/up.sh started (by the process ids it wrote) and removes its
# directory, the replica's data included.
set -u
cd "$(dirname "$0")/../.."
dir="${TOPOLOGY_DIR:-/tmp/ticketing-topology}"
[ -d "$dir" ] || exit 0

stop_pid() {
    kill -TERM "$1" 2>/dev/null || return 0
    for _ in $(seq 1 150); do
        kill -0 "$1" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$1" 2>/dev/null || true
}

[ -f "$dir/haproxy.pid" ] && stop_pid "$(cat "$dir/haproxy.pid")"
if [ -f "$dir/pids" ]; then
    for pid in $(cat "$dir/pids"); do stop_pid "$pid"; done
fi
deploy/pgbouncer.sh stop "$dir/pgbouncer"
deploy/topology/replica.sh stop "$dir/replica"
[ -f "$dir/redis.pid" ] && stop_pid "$(cat "$dir/redis.pid")"
if [ -f "$dir/cgroups" ]; then
    for group in $(cat "$dir/cgroups"); do rmdir "$group" 2>/dev/null || true; done
fi
rm -rf "$dir"
echo "topology: down"
