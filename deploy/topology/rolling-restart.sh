#!/bin/sh
# Restarts deploy/topology's app hosts one at a time with no request lost (deploy/README.md,
# "Restarts and deploys"). For each host, through HAProxy's runtime API (its stats socket):
#   drain    no new request goes to the host; those it holds finish,
#   maint    once it holds none: out of the balancer, health checks stopped,
#   stop     SIGTERM: gunicorn finishes what its workers hold and exits,
#   start    the host's start script (new code, new settings),
#   ready    once it answers /healthz itself; then the next host, once the balancer has it UP.
# RELEASE_MIGRATE=1 runs `manage.py migrate` once, while the first host is stopped: only
# expand migrations (the other host still runs the old code on the new schema), contract ones a
# release later.
#
#   TOPOLOGY_DIR=/tmp/ticketing-topology deploy/topology/rolling-restart.sh [host11 host12]
set -eu
cd "$(dirname "$0")/../.."
dir="${TOPOLOGY_DIR:-/tmp/ticketing-topology}"
PYTHON="${PYTHON:-.venv/bin/python}"
WAIT="${RESTART_WAIT:-120}"  # seconds any step may take: longer than gunicorn's graceful_timeout

balancer() { TOPOLOGY_DIR="$dir" PYTHON="$PYTHON" deploy/topology/balancer.sh "$@"; }

held() {  # requests the balancer has on server $1, in progress or queued for it
    balancer "show stat" | awk -F, -v s="$1" '$1 == "app" && $2 == s { print $3 + $5 }'
}

up_at_balancer() {  # server $1 is UP (operational state 2) and not in maintenance
    balancer "show servers state app" | awk -v s="$1" '$4 == s && $6 == 2 && $7 == 0 { ok = 1 }
        END { exit !ok }'
}

wait_until() {  # wait_until WHAT COMMAND...: until COMMAND succeeds, at most $WAIT seconds
    what="$1"
    shift
    tries=$((WAIT * 10))
    until "$@"; do
        tries=$((tries - 1))
        [ "$tries" -gt 0 ] || { echo "rolling-restart: $what: not in ${WAIT} s" >&2; exit 1; }
        sleep 0.1
    done
}

idle() { [ "$(held "$1")" = 0 ]; }
gone() { ! kill -0 "$1" 2>/dev/null; }
healthy() { curl -sf -o /dev/null "http://$1/healthz"; }

port="$(sed -n 's/^APP_HOSTS=[^ ]*:\([0-9]*\) .*/\1/p' "$dir/env")"
servers="${*:-$(balancer "show servers state app" | awk 'NR > 2 && NF { print $4 }')}"
migrate="${RELEASE_MIGRATE:-0}"
for server in $servers; do
    number="${server#host}"
    started="$(date +%s.%N)"
    balancer "set server app/$server state drain" >/dev/null
    wait_until "$server drained" idle "$server"
    balancer "set server app/$server state maint" >/dev/null
    pid="$(cat "$dir/app-$number.pid")"
    kill -TERM "$pid"
    wait_until "$server stopped" gone "$pid"
    if [ "$migrate" = 1 ]; then
        (. "$dir/app.env" && "$PYTHON" manage.py migrate --no-input)
        migrate=0
    fi
    setsid sh "$dir/app-$number.sh" </dev/null >/dev/null 2>&1 &
    wait_until "$server healthy" healthy "127.0.0.$number:$port"
    balancer "set server app/$server state ready" >/dev/null
    wait_until "$server up at the balancer" up_at_balancer "$server"
    echo "rolling-restart: $server restarted in $(awk -v a="$started" -v b="$(date +%s.%N)" \
        'BEGIN { printf "%.1f", b - a }') s"
done
