"""A WSGI application for tests/topology/test_gunicorn_signals.py, served by gunicorn with
deploy/gunicorn.conf.py: `/hold/<name>` marks `<name>.started` in HELD_DIR and answers only once
the test has created `<name>.release` there; any other path answers at once with the worker's pid.
"""

import os
import time
from pathlib import Path

HOLD_LIMIT = 60  # seconds a request is held at most, should a test never release it


def application(environ, start_response):
    path = environ["PATH_INFO"]
    if path.startswith("/hold/"):
        held = Path(os.environ["HELD_DIR"])
        name = path.removeprefix("/hold/")
        (held / f"{name}.started").touch()
        deadline = time.monotonic() + HOLD_LIMIT
        while not (held / f"{name}.release").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
    body = str(os.getpid()).encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
