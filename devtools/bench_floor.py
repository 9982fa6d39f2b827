"""Bench-only endpoints for `bench/checkin_throughput.py --floor`; no deployment serves them
(the Docker image leaves this module and its routes out).

They answer "how fast could a check-in be?" with the API's own stack minus its duties: a bare
DRF view (no token, rate limit or organizer check) that runs one `SELECT 1`, and one that runs
only the check-in's admission statement. Served by gunicorn with `DJANGO_SETTINGS_MODULE` set
to this module, which is the production settings with these routes added.
"""

from ticketing.settings.production import *  # noqa: F403

ROOT_URLCONF = "devtools.bench_floor_urls"
