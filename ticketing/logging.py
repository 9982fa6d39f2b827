"""Keep OAuth access tokens out of log lines, including tokens sent in a query string."""

import logging
import re

_TOKEN_IN_QUERY = re.compile(
    r"((?:access_token|refresh_token|code|client_secret)=)[^&\s\"']+", re.I
)
_BEARER = re.compile(r"(Bearer\s+)[A-Za-z0-9\-._~+/]+=*", re.I)


def scrub(text: str) -> str:
    return _BEARER.sub(r"\1[scrubbed]", _TOKEN_IN_QUERY.sub(r"\1[scrubbed]", text))


class ScrubTokensFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = scrub(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True
