#!/bin/sh
# Hosts that share nothing, on one machine: two app servers (gunicorn on 127.0.0.11 and
# 127.0.0.12, each confined to part of the CPU with taskset), two task workers (one per host),
# HAProxy in front, PgBouncer (transaction pooling) in front of the primary, a streaming
# replica of the primary, and Redis. deploy/topology/down.sh stops it all.
#
#   TOPOLOGY_DIR=/tmp/ticketing-topology deploy/topology/up.sh
#
# The primary is the PostgreSQL already on 127.0.0.1:5432 (it must allow replication
# connections from 127.0.0.1: deploy/README.md). Settings, from the environment:
#   TOPOLOGY_DATABASE (ticketing_topology; created and migrated unless SKIP_MIGRATE=1),
#   TOPOLOGY_PORT (8080: the balancer), APP_PORT (8000), PGBOUNCER_PORT (6432),
#   REPLICA_PORT (5433), REDIS_URL (redis://127.0.0.1:6379/7; a Redis is started on port 6390
#   when none answers there), APP_CPUS (0 1: taskset CPU lists of the two hosts),
#   TOPOLOGY_POOLER (pgbouncer; none: the app hosts connect to the primary directly),
#   WEB_CONCURRENCY (2 per app host), PYTHON (.venv/bin/python), APP_CPU_QUOTA (percent of
#   one core each app host may use, by a cgroup v1 CPU quota; unset: no quota),
#   TOPOLOGY_REPLICA (streaming; none: no replica, every read from the primary; external: the
#   DATABASE_REPLICA_URLS given), PRIMARY_PORT (5432: the primary, or HAProxy's write port of
#   deploy/topology/patroni-up.sh's cluster, with TOPOLOGY_REPLICA=external and its read port).
#
# HAProxy is a host of its own too: it calls the app hosts from 127.0.0.10, the one address the
# app servers trust to say who the client is (TRUSTED_PROXIES), in the X-Forwarded-For header
# it sets, replacing whatever a client sent.
# Any other setting of the service (DATABASE_REPLICA_MAX_LAG_SECONDS, ...) passes through.
set -eu
cd "$(dirname "$0")/../.."
dir="${TOPOLOGY_DIR:-/tmp/ticketing-topology}"
database="${TOPOLOGY_DATABASE:-ticketing_topology}"
balancer_port="${TOPOLOGY_PORT:-8080}"
balancer_address=127.0.0.10
app_port="${APP_PORT:-8000}"
pgbouncer_port="${PGBOUNCER_PORT:-6432}"
replica_port="${REPLICA_PORT:-5433}"
primary_port="${PRIMARY_PORT:-5432}"
PYTHON="${PYTHON:-.venv/bin/python}"
set -- ${APP_CPUS:-0 1}
cpus_a="$1"
cpus_b="${2:-$1}"

if [ -e "$dir/pids" ]; then
    echo "topology: already up in $dir (deploy/topology/down.sh first)" >&2
    exit 1
fi
mkdir -p "$dir"
chmod 755 "$dir"  # the replica and PgBouncer run as the postgres user
: >"$dir/pids"
trap 'echo "topology: start failed; stopping what started" >&2; TOPOLOGY_DIR="$dir" deploy/topology/down.sh' EXIT

pg_isready -q -h 127.0.0.1 -p "$primary_port" || {
    echo "topology: no primary on $primary_port" >&2
    exit 1
}
redis_url="${REDIS_URL:-redis://127.0.0.1:6379/7}"
if ! redis-cli -u "$redis_url" ping >/dev/null 2>&1; then
    redis-server --daemonize yes --bind 127.0.0.1 --port 6390 --save "" --appendonly no \
        --pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
    redis_url="redis://127.0.0.1:6390/0"
fi

deploy/pgbouncer.sh start "$dir/pgbouncer" "$pgbouncer_port" "$primary_port"
case "${TOPOLOGY_REPLICA:-streaming}" in
streaming)
    deploy/topology/replica.sh start "$dir/replica" "$replica_port" "$primary_port"
    export DATABASE_REPLICA_URLS="postgres://postgres@127.0.0.1:$replica_port/$database"
    ;;
external) export DATABASE_REPLICA_URLS ;;
*) unset DATABASE_REPLICA_URLS DATABASE_REPLICA_URL ;;
esac

export DJANGO_SETTINGS_MODULE=ticketing.settings.production
export DATABASE_URL="postgres://postgres@127.0.0.1:$pgbouncer_port/$database"
export DB_TRANSACTION_POOLER=true
if [ "${TOPOLOGY_POOLER:-pgbouncer}" = none ]; then
    # The app hosts straight to the primary (prepared statements on), to compare.
    export DATABASE_URL="postgres://postgres@127.0.0.1:$primary_port/$database"
    unset DB_TRANSACTION_POOLER
fi
export REDIS_URL="$redis_url"
export SECRET_KEY="${SECRET_KEY:-$("$PYTHON" -c 'import secrets; print(secrets.token_urlsafe(50))')}"
export ALLOWED_HOSTS="${ALLOWED_HOSTS:-127.0.0.1,127.0.0.11,127.0.0.12,localhost}"
export SECURE_SSL_REDIRECT=false
export TRUSTED_PROXIES="$balancer_address"
export EMAIL_BACKEND="${EMAIL_BACKEND:-django.core.mail.backends.filebased.EmailBackend}"
export EMAIL_FILE_PATH="${EMAIL_FILE_PATH:-$dir/mail}"
export WEB_CONCURRENCY="${WEB_CONCURRENCY:-2}"
export PORT="$app_port"
if [ "${SKIP_MIGRATE:-0}" != 1 ]; then
    psql -h 127.0.0.1 -p "$primary_port" -U postgres -d postgres \
        -tAc "select 1 from pg_database where datname = '$database'" | grep -q 1 ||
        psql -h 127.0.0.1 -p "$primary_port" -U postgres -d postgres \
            -qc "create database \"$database\""
    "$PYTHON" manage.py migrate --no-input >/dev/null
fi

# The app hosts' environment, for deploy/topology/rolling-restart.sh to start one again as it
# was started here (it holds SECRET_KEY: this user's alone).
rm -f "$dir/app.env"
(umask 077 && export -p >"$dir/app.env")

# An app server and a task worker per host, on that host's CPUs (and its share of them). Each app
# server is started by a script of its own, which rolling-restart.sh runs again; the script
# records its process id (gunicorn's master, by exec) for down.sh.
root="$(pwd)"
host=11
for cpus in "$cpus_a" "$cpus_b"; do
    confine=
    if [ -n "${APP_CPU_QUOTA:-}" ]; then
        group="/sys/fs/cgroup/cpu/ticketing-$(basename "$dir")-$host"
        mkdir -p "$group"
        echo 100000 >"$group/cpu.cfs_period_us"
        echo "$((APP_CPU_QUOTA * 1000))" >"$group/cpu.cfs_quota_us"
        echo "$group" >>"$dir/cgroups"
        confine="echo \$\$ >$group/cgroup.procs"
    fi
    cat >"$dir/app-$host.sh" <<APP
#!/bin/sh
# App host 127.0.0.$host, as deploy/topology/up.sh started it.
. "$dir/app.env"
cd "$root"
echo \$\$ >>"$dir/pids"
$confine
HOST=127.0.0.$host exec taskset -c $cpus $PYTHON -m gunicorn -c deploy/gunicorn.conf.py \\
    --pid "$dir/app-$host.pid" >>"$dir/app-$host.log" 2>&1
APP
    setsid sh "$dir/app-$host.sh" </dev/null &
    # Task workers keep session connections to the primary, not the transaction pooler: the
    # webhook relay's per-organizer slots are session advisory locks (webhooks/statements.py).
    # Named in pg_stat_activity, so that their share of the primary's work can be told apart.
    env -u DB_TRANSACTION_POOLER \
        DATABASE_URL="postgres://postgres@127.0.0.1:$primary_port/$database?application_name=worker" \
        setsid taskset -c "$cpus" "$PYTHON" manage.py run_worker --no-reload \
        >"$dir/worker-$host.log" 2>&1 &
    echo "$!" >>"$dir/pids"
    host=$((host + 1))
done

# The balancer's own errors in the API's shape, as deploy/nginx.conf's: no app host up (their
# /healthz fails while the database they share fails over) or one that died mid-answer is
# CONTRACT §2's 503 with Retry-After, not HAProxy's HTML page.
printf '%s\r\n' 'HTTP/1.1 503 Service Unavailable' 'Content-Type: application/json' \
    'Retry-After: 5' 'Cache-Control: no-store' 'Connection: close' '' \
    '{"success": false, "error": "service_unavailable", "message": "The service is briefly unavailable; try again shortly."}' \
    >"$dir/unavailable.http"

# The balancer. Its runtime API (the stats socket) is how deploy/topology/rolling-restart.sh
# drains a host before stopping it. A request that reached no app host (connection refused: a
# host stopping or killed, before its health check says so) is sent again, to the other host
# (redispatch on every retry). One that reached an app host is sent again only when it is a GET
# or HEAD: a POST may have been applied (a check-in without scan_id would answer "already used"
# the second time, a creation without external_id would create twice), so a POST whose answer
# was lost comes back to its client as the 503 above, and a gate asks again with the same
# scan_id (CONTRACT §7). A new connection to the app host per request (http-reuse never): on a
# kept-alive one that the host closes, stopping or killed, as a request goes out, a POST is lost
# that never reached the app; a connection refused is retried.
cat >"$dir/haproxy.cfg" <<CFG
global
    maxconn 2000
    pidfile $dir/haproxy.pid
    stats socket $dir/haproxy.sock mode 600 level admin
defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    option forwardfor
    retries 3
    option redispatch 1
    retry-on conn-failure empty-response response-timeout
    errorfile 502 $dir/unavailable.http
    errorfile 503 $dir/unavailable.http
    errorfile 504 $dir/unavailable.http
frontend public
    bind 127.0.0.1:$balancer_port
    # The edge: the client's address is the connection's (option forwardfor), never the one
    # a client wrote in its own X-Forwarded-For.
    http-request del-header X-Forwarded-For
    default_backend app
backend app
    balance roundrobin
    source $balancer_address
    http-reuse never
    http-request disable-l7-retry unless METH_GET
    option httpchk
    http-check send meth GET uri /healthz hdr Host 127.0.0.1
    # A refused connection marks the host down at once, not at its second failed check.
    default-server check inter 1s fall 2 rise 1 observe layer4 error-limit 1 on-error mark-down
    server host11 127.0.0.11:$app_port
    server host12 127.0.0.12:$app_port
CFG
haproxy -D -f "$dir/haproxy.cfg"

for target in "127.0.0.11:$app_port" "127.0.0.12:$app_port" "127.0.0.1:$balancer_port"; do
    ready=0
    for _ in $(seq 1 600); do
        if curl -sf -o /dev/null "http://$target/healthz"; then ready=1; break; fi
        sleep 0.2
    done
    [ "$ready" = 1 ] || { echo "topology: $target not healthy; see $dir/*.log" >&2; exit 1; }
done
# Until the balancer's own health checks have both app hosts UP (operational state 2).
ready=0
for _ in $(seq 1 100); do
    if TOPOLOGY_DIR="$dir" PYTHON="$PYTHON" deploy/topology/balancer.sh "show servers state app" |
        awk 'NR > 2 && NF { n++; if ($6 == 2) up++ } END { exit !(n > 0 && up == n) }'; then
        ready=1
        break
    fi
    sleep 0.1
done
[ "$ready" = 1 ] || { echo "topology: the balancer does not have both app hosts up" >&2; exit 1; }
# What the checks and the bench need to reach it; SECRET_KEY signs sessions and whatever else
# Django signs, so only this user may read it.
rm -f "$dir/env"
(umask 077 && cat >"$dir/env") <<ENV
DATABASE_URL=$DATABASE_URL
DATABASE_REPLICA_URLS=${DATABASE_REPLICA_URLS:-}
REDIS_URL=$REDIS_URL
SECRET_KEY=$SECRET_KEY
BALANCER=127.0.0.1:$balancer_port
APP_HOSTS=127.0.0.11:$app_port 127.0.0.12:$app_port
REPLICA_DIR=$dir/replica
ENV
trap - EXIT
echo "topology: up; balancer http://127.0.0.1:$balancer_port (state in $dir)"
