"""Keep OAuth secrets out of log lines (CONTRACT §4), including tokens sent in a query string.

The filter sits on the console handler (settings.LOGGING) and, through
`install_token_scrubbing()`, on the loggers that write their own lines without passing through
that handler: Django's development server access log (`django.server`) and gunicorn's
(`gunicorn.access`, `gunicorn.error`).
"""

import logging
import re

# Query-string and form parameters that carry a secret. The look-behind keeps names that merely
# end in one of these (`reference_code=`) readable.
_SECRET_PARAMS = r"access_token|refresh_token|client_secret|code_verifier|code|token|password"
_SECRET_IN_QUERY = re.compile(rf"((?<![A-Za-z0-9_])(?:{_SECRET_PARAMS})=)[^&\s\"']+", re.I)
# The same names as JSON keys, for a logged token response or request body.
_SECRET_IN_JSON = re.compile(rf"(\"(?:{_SECRET_PARAMS})\"\s*:\s*\")[^\"]*(\")", re.I)
_BEARER = re.compile(r"((?:Bearer|Basic)\s+)[A-Za-z0-9\-._~+/]+=*", re.I)

SCRUBBED = "[scrubbed]"

# Loggers whose records never reach the scrubbing console handler on their own.
ACCESS_LOGGERS = ("django.server", "django.request", "gunicorn.access", "gunicorn.error")


def scrub(text: str) -> str:
    text = _SECRET_IN_QUERY.sub(rf"\1{SCRUBBED}", text)
    text = _SECRET_IN_JSON.sub(rf"\1{SCRUBBED}\2", text)
    return _BEARER.sub(rf"\1{SCRUBBED}", text)


class ScrubTokensFilter(logging.Filter):
    """Rewrites the record's message in place, so every later handler sees the clean text."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            return True  # a malformed record is logging's own problem to report
        cleaned = scrub(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


def install_token_scrubbing() -> None:
    """Attach the filter to the access loggers (idempotent; called when Django starts).

    Logger-level filters run before any handler, including the ones Django's default logging
    and gunicorn attach to these loggers, which settings.LOGGING does not reach.
    """
    for name in ACCESS_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, ScrubTokensFilter) for f in logger.filters):
            logger.addFilter(ScrubTokensFilter())
