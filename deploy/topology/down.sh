#!/bin/sh
# Stops what deploy/topology/up.sh started (by the process ids it wrote) and removes its
# directory, the replica's data included.
set -u
cd "$(dirname "$0")/../.."
dir="${TOPOLOGY_DIR:-/tmp/ticketing-topology}"
[ -d "$dir" ] || exit 0

. deploy/topology/stopping.sh

[ -f "$dir/haproxy.pid" ] && stop_pid "$(cat "$dir/haproxy.pid")"
# Each group at once, so that a stop takes its slowest process's time, not the sum of them all:
# the app servers and workers, then what they used.
for pid in $(cat "$dir/pids" 2>/dev/null); do stop_pid "$pid" & done
wait
deploy/pgbouncer.sh stop "$dir/pgbouncer" &
deploy/topology/replica.sh stop "$dir/replica" &
[ -f "$dir/redis.pid" ] && stop_pid "$(cat "$dir/redis.pid")" &
wait
if [ -f "$dir/cgroups" ]; then
    for group in $(cat "$dir/cgroups"); do rmdir "$group" 2>/dev/null || true; done
fi
rm -rf "$dir"
echo "topology: down"
