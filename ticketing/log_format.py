"""One JSON object per log line, for log shippers (production's stdout).

Fields: `time` (ISO 8601, UTC), `level`, `logger`, `message`, `request_id`, the `http_*` and
`duration_ms` fields of access lines, `status_code` of Django's request errors, and `exc_type` /
`exc` (the traceback) when an exception is attached. Tracebacks go to the log, never to a
response body.
"""

import json
import logging
from datetime import UTC, datetime

from ticketing.logging import scrub, scrub_url

# Record attributes worth shipping when a logger sets them through `extra=`.
_EXTRA_FIELDS = ("http_method", "http_path", "http_status", "duration_ms", "status_code")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None) or "-",
        }
        for name in _EXTRA_FIELDS:
            value = getattr(record, name, None)
            if isinstance(value, str | int | float):
                entry[name] = scrub_url(value) if name == "http_path" else value
        if record.exc_info and record.exc_info[0] is not None:
            entry["exc_type"] = record.exc_info[0].__name__
            # A traceback can quote a request line or a SQL parameter that held a token.
            entry["exc"] = scrub(self.formatException(record.exc_info))
        elif record.exc_text:
            entry["exc"] = scrub(record.exc_text)
        return json.dumps(entry, ensure_ascii=False, default=str)
