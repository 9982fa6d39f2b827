"""The production settings plus `bench._counting`'s middleware: served only by `bench/gate.py`."""

from ticketing.settings.production import *  # noqa: F403
from ticketing.settings.production import MIDDLEWARE

MIDDLEWARE = ["bench._counting.CountingMiddleware", *MIDDLEWARE]
