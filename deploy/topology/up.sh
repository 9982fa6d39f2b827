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
#   one core each app host may use, by a cgroup v1 CPU quota; unset: no quota).
# Any other setting of the service (DATABASE_REPLICA_MAX_LAG_SECONDS, ...) passes through.
set -eu
cd "$(dirname "$0")/../.."
dir="${TOPOLOGY_DIR:-/tmp/ticketing-topology}"
database="${TOPOLOGY_DATABASE:-ticketing_topology}"
balancer_port="${TOPOLOGY_PORT:-8080}"
app_port="${APP_PORT:-8000}"
pgbouncer_port="${PGBOUNCER_PORT:-6432}"
replica_port="${REPLICA_PORT:-5433}"
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

pg_isready -q -h 127.0.0.1 -p 5432 || { echo "topology: no primary on 5432" >&2; exit 1; }
redis_url="${REDIS_URL:-redis://127.0.0.1:6379/7}"
if ! redis-cli -u "$redis_url" ping >/dev/null 2>&1; then
    redis-server --daemonize yes --bind 127.0.0.1 --port 6390 --save "" --appendonly no \
        --pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
    redis_url="redis://127.0.0.1:6390/0"
fi

deploy/pgbouncer.sh start "$dir/pgbouncer" "$pgbouncer_port" 5432
deploy/topology/replica.sh start "$dir/replica" "$replica_port" 5432

export DJANGO_SETTINGS_MODULE=ticketing.settings.production
export DATABASE_URL="postgres://postgres@127.0.0.1:$pgbouncer_port/$database"
export DB_TRANSACTION_POOLER=true
if [ "${TOPOLOGY_POOLER:-pgbouncer}" = none ]; then
    # The app hosts straight to the primary (prepared statements on), to compare.
    export DATABASE_URL="postgres://postgres@127.0.0.1:5432/$database"
    unset DB_TRANSACTION_POOLER
fi
export DATABASE_REPLICA_URLS="postgres://postgres@127.0.0.1:$replica_port/$database"
export REDIS_URL="$redis_url"
export SECRET_KEY="${SECRET_KEY:-$("$PYTHON" -c 'import secrets; print(secrets.token_urlsafe(50))')}"
export ALLOWED_HOSTS="${ALLOWED_HOSTS:-127.0.0.1,127.0.0.11,127.0.0.12,localhost}"
export SECURE_SSL_REDIRECT=false
export EMAIL_BACKEND="${EMAIL_BACKEND:-django.core.mail.backends.filebased.EmailBackend}"
export EMAIL_FILE_PATH="${EMAIL_FILE_PATH:-$dir/mail}"
export WEB_CONCURRENCY="${WEB_CONCURRENCY:-2}"
export PORT="$app_port"
if [ "${SKIP_MIGRATE:-0}" != 1 ]; then
    psql -h 127.0.0.1 -U postgres -tAc "select 1 from pg_database where datname = '$database'" \
        | grep -q 1 || psql -h 127.0.0.1 -U postgres -qc "create database \"$database\""
    "$PYTHON" manage.py migrate --no-input >/dev/null
fi

# An app server and a task worker per host, on that host's CPUs (and its share of them).
confine=
host=11
for cpus in "$cpus_a" "$cpus_b"; do
    if [ -n "${APP_CPU_QUOTA:-}" ]; then
        group="/sys/fs/cgroup/cpu/ticketing-$(basename "$dir")-$host"
        mkdir -p "$group"
        echo 100000 >"$group/cpu.cfs_period_us"
        echo "$((APP_CPU_QUOTA * 1000))" >"$group/cpu.cfs_quota_us"
        echo "$group" >>"$dir/cgroups"
        confine="echo \$\$ >$group/cgroup.procs;"
    fi
    HOST="127.0.0.$host" setsid sh -c "$confine exec taskset -c $cpus $PYTHON -m gunicorn \
        -c deploy/gunicorn.conf.py" >"$dir/app-$host.log" 2>&1 &
    echo "$!" >>"$dir/pids"
    # Task workers keep session connections to the primary, not the transaction pooler: the
    # webhook relay's per-organizer slots are session advisory locks (webhooks/statements.py).
    env -u DB_TRANSACTION_POOLER DATABASE_URL="postgres://postgres@127.0.0.1:5432/$database" \
        setsid taskset -c "$cpus" "$PYTHON" manage.py run_worker --no-reload \
        >"$dir/worker-$host.log" 2>&1 &
    echo "$!" >>"$dir/pids"
    host=$((host + 1))
done

cat >"$dir/haproxy.cfg" <<CFG
global
    maxconn 2000
    pidfile $dir/haproxy.pid
defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    option forwardfor
    retries 2
    option redispatch
frontend public
    bind 127.0.0.1:$balancer_port
    default_backend app
backend app
    balance roundrobin
    option httpchk
    http-check send meth GET uri /healthz hdr Host 127.0.0.1
    server host11 127.0.0.11:$app_port check inter 1s fall 2 rise 1
    server host12 127.0.0.12:$app_port check inter 1s fall 2 rise 1
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
# What the checks and the bench need to reach it.
cat >"$dir/env" <<ENV
DATABASE_URL=$DATABASE_URL
DATABASE_REPLICA_URLS=$DATABASE_REPLICA_URLS
REDIS_URL=$REDIS_URL
SECRET_KEY=$SECRET_KEY
BALANCER=127.0.0.1:$balancer_port
APP_HOSTS=127.0.0.11:$app_port 127.0.0.12:$app_port
REPLICA_DIR=$dir/replica
ENV
trap - EXIT
echo "topology: up; balancer http://127.0.0.1:$balancer_port (state in $dir)"
