#!/bin/sh
# Production-like run on one machine: migrate, collect the admin's static files, start gunicorn.
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
    # Fine for a trial; `check --deploy` refuses it (ticketing.E002).
    echo "serve: SITE_URL not set; ticket links will point at http://${HOST:-127.0.0.1}:${PORT:-8000}" >&2
fi
# The system checks first, so a refused configuration (e.g. ticket emails to the console)
# stops here even with SKIP_MIGRATE.
"$PYTHON" manage.py check
if [ "${SKIP_MIGRATE:-0}" != "1" ]; then
    "$PYTHON" manage.py migrate --no-input --skip-checks
fi
"$PYTHON" manage.py collectstatic --no-input --verbosity 0
exec "$PYTHON" -m gunicorn -c deploy/gunicorn.conf.py
