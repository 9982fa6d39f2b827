"""Keep OAuth secrets out of log lines (CONTRACT §4), including tokens sent in a query string.

The filter sits on the console handler (settings.LOGGING) and, through
`install_token_scrubbing()`, on the loggers that write their own lines without passing through
that handler: Django's development server access log (`django.server`) and gunicorn's
(`gunicorn.access`, `gunicorn.error`). Every logged URL, whoever logs it (the request line of
`ticketing.middleware`, the JSON formatter's `http_path`, these access lines), goes through
`scrub_url`.
"""

import logging
import re
from urllib.parse import unquote, unquote_plus

# Parameters that carry a secret, compared with a parameter's decoded name.
SECRET_PARAMS = frozenset(
    {"access_token", "refresh_token", "client_secret", "code_verifier", "code", "token", "password"}
)
# The same names as JSON keys, for a logged token response or request body.
_SECRET_NAMES = "|".join(sorted(SECRET_PARAMS))
_SECRET_IN_JSON = re.compile(rf"(\"(?:{_SECRET_NAMES})\"\s*:\s*\")[^\"]*(\")", re.I)
_BEARER = re.compile(r"((?:Bearer|Basic)\s+)[A-Za-z0-9\-._~+/]+=*", re.I)
# Control characters in a logged path would let a caller forge lines in plain-text logs.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# What separates the parameters of a query, a form body or a path segment (`/x;token=T`).
_PARAM_SEPARATORS = re.compile(r"([?&;])")
_WHITESPACE = re.compile(r"(\s+)")

SCRUBBED = "[scrubbed]"

# Loggers whose records never reach the scrubbing console handler on their own.
ACCESS_LOGGERS = ("django.server", "django.request", "gunicorn.access", "gunicorn.error")


def scrub_url(url: str, *, _depth: int = 0) -> str:
    """`url` (a path with its query, raw or decoded, or a form body) with every secret replaced.

    The one place that decides what of a URL may be logged. Parameters are split on `?`, `&` and
    `;`, and judged by their decoded name, wherever they are: `?access%5Ftoken=T`,
    `/x/token=T`, `/x;code=T`. A part that decodes to something else (`%3Ftoken%3DT`, a
    `redirect_uri` holding a URL) is judged decoded too, and shown decoded if that hides a
    secret. The text is otherwise kept as it came, with control characters escaped.
    """
    parts = _PARAM_SEPARATORS.split(url)
    for index in range(0, len(parts), 2):
        parts[index] = _scrub_param(parts[index], _depth)
    return _escape_controls("".join(parts))


# Layers of percent-encoding looked through: a client's own URL inside a parameter, encoded
# once more by a careless client. Bounded, so that a hostile path costs little.
_MAX_DECODINGS = 3


def _scrub_param(param: str, depth: int) -> str:
    name, equals, value = param.partition("=")
    # The name is what follows the path's last slash (`/x/access_token=T`).
    name = unquote_plus(name.rsplit("/", 1)[-1]).strip(" \"'([{<").lower()
    if equals and value and name in SECRET_PARAMS:
        return f"{param[: len(param) - len(value)]}{SCRUBBED}"
    decoded = unquote(param)
    if decoded != param and depth < _MAX_DECODINGS:
        scrubbed = scrub_url(decoded, _depth=depth + 1)
        if scrubbed != _escape_controls(decoded):
            return scrubbed
    return param


def _escape_controls(text: str) -> str:
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def scrub(text: str) -> str:
    """A log message without secrets: URLs and forms word by word, JSON keys, credentials."""
    words = _WHITESPACE.split(text)
    for index in range(0, len(words), 2):
        if "=" in words[index] or "%" in words[index]:
            words[index] = scrub_url(words[index])
    text = _SECRET_IN_JSON.sub(rf"\1{SCRUBBED}\2", "".join(words))
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
