#!/bin/sh
# Production-like run on one machine: migrate, collect the admin's static files, start a task
# worker per queue (TASK_WORKER_QUEUES, default "email webhooks default"; empty: none, when the
# workers run elsewhere) and gunicorn. SIGTERM or SIGINT stops them all.
# Reads DATABASE_URL, REDIS_URL, SECRET_KEY, ALLOWED_HOSTS, EMAIL_*, PORT, WEB_CONCURRENCY from
# the environment (see deploy/README.md). With several app servers, run the migrate step once per
# release (the Procfile's `release` line) rather than on every server at the same time.
set -eu
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
export DJANGO_SETTINGS_MODULE="${DJANGO_SETTINGS_MODULE:-ticketing.settings.production}"
if [ -z "${SECRET_KEY:-}" ]; then
    # Fine for one machine's trial run; a deployment sets one key shared by every server.
    SECRET_KEY="$("$PYTHON" -c 'import secrets; print(secrets.token_urlsafe(50))')"
    export SECRET_KEY
    echo "serve: SECRET_KEY not set; using a random one (sessions end when the server stops)" >&2
fi
if [ -z "${SITE_URL:-}" ]; then
    # Fine for a trial on this machine (a loopback HOST); any other address is refused below.
    echo "serve: SITE_URL not set; ticket links will point at http://${HOST:-127.0.0.1}:${PORT:-8000}" >&2
fi
# The system checks first, so a refused configuration (e.g. ticket emails to the console)
# stops here even with SKIP_MIGRATE.
"$PYTHON" manage.py check
if [ "${SKIP_MIGRATE:-0}" != "1" ]; then
    "$PYTHON" manage.py migrate --no-input --skip-checks
fi
"$PYTHON" manage.py collectstatic --no-input --verbosity 0
# A signal ends the `wait` early: pass it on to everyone, and exit as gunicorn does.
workers=
gunicorn=
stopping=0
trap 'stopping=1; kill -TERM $gunicorn $workers 2>/dev/null || true' INT TERM
# HUP reloads gunicorn's settings and workers (deploy/README.md, "Restarts and deploys"); the
# `wait` it ends is waited again below.
trap 'kill -HUP $gunicorn 2>/dev/null || true' HUP
for queue in ${TASK_WORKER_QUEUES-email webhooks default}; do
    "$PYTHON" manage.py run_worker --no-reload --queue-name "$queue" &
    workers="$workers $!"
done
"$PYTHON" -m gunicorn -c deploy/gunicorn.conf.py &
gunicorn=$!
if [ "$stopping" = 1 ]; then kill -TERM "$gunicorn"; fi  # the signal came before it started
status=0
wait "$gunicorn" || status=$?
# A trapped signal ends `wait` early: wait again while gunicorn still runs.
while kill -0 "$gunicorn" 2>/dev/null; do
    status=0
    wait "$gunicorn" || status=$?
done
kill -TERM $workers 2>/dev/null || true
wait
exit "$status"
