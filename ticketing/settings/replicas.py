"""Read replicas as database aliases (`replica1`, `replica2`, ...), from DATABASE_REPLICA_URLS.

Each is a hot standby of the primary (`default`), reached directly (not through the pooler:
a standby's connections hold no locks and its statements may stay prepared). Tests mirror
`default`: a standby cannot create a test database, and is the same data anyway.
"""

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from .env import env_str


def replica_databases(primary: dict, urls: list[str]) -> dict[str, dict]:
    urls = urls or ([env_str("DATABASE_REPLICA_URL")] if env_str("DATABASE_REPLICA_URL") else [])
    replicas = {}
    for number, url in enumerate(urls, start=1):
        try:
            database = dj_database_url.parse(url, conn_max_age=primary.get("CONN_MAX_AGE", 0))
        except ValueError as exc:
            message = f"DATABASE_REPLICA_URLS has a URL we do not understand: {exc}"
            raise ImproperlyConfigured(message) from None
        database["CONN_HEALTH_CHECKS"] = False
        # A replica that does not answer is skipped: it must not hold a request for long.
        database["OPTIONS"] = {"connect_timeout": 2}
        database["TEST"] = {"MIRROR": "default"}
        replicas[f"replica{number}"] = database
    return replicas
