"""What a log line holds: OAuth secrets kept out (CONTRACT §4), including tokens sent in a query
string; the id of the request being served (`RequestIdFilter`); and, for log shippers, one JSON
object per line (`JsonFormatter`). The logging configurations (settings.LOGGING, gunicorn's)
load these classes before Django is set up: this module imports nothing of Django's.

Of a URL's query only the parameter names are logged, never a value. A rule by name ("scrub
`access_token`") misses every name the rule reads differently from the client or the server
(`access_token[]`, `access_token%00`, `acc%C3%A9ss_token`), and a client that sends its token
under such a name leaks it; a value that is never written cannot leak. In a path, which has
no parameters of this API, every value after an `=` is scrubbed whatever its name.

The filter sits on the console handler (settings.LOGGING) and, through
`install_token_scrubbing()`, on the loggers that write their own lines without passing through
that handler: Django's development server access log (`django.server`) and gunicorn's
(`gunicorn.access`, `gunicorn.error`). Every logged URL, whoever logs it (the request line of
`ticketing.middleware`, the JSON formatter's `http_path`, servers' request lines, Django's
"Not Found: <path>", a URL quoted in an exception), goes through `loggable_url`.
"""

import contextvars
import json
import logging
import re
import string
import unicodedata
from datetime import UTC, datetime
from urllib.parse import unquote, unquote_plus

SCRUBBED = "[scrubbed]"

# --- URLs: the path, and the names of the query ---------------------------------------------

# No credential this service issues fits in a name this long (tokens and codes have 30
# characters, secrets and PKCE verifiers more), so one sent as a bare name (`?<token>`) is not
# logged either; the query parameters of the API and of OAuth have shorter names.
MAX_NAME_LENGTH = 24
LONG_NAME = "[long-name]"
# A query of thousands of names costs one line, not a page.
MAX_NAMES = 20

# `=` however often percent-encoded: `=`, `%3D`, `%253D`...
_EQUALS = re.compile(r"=|%(?:25)*3d", re.I)
# In a path, a value runs from an `=` to the next separator (`/x;token=T`, `/x/code=T/y`).
_PATH_VALUE = re.compile(r"(=|%(?:25)*3d)[^;&?]+", re.I)
# Shown as they are in a name; anything else (a control character, a quote, a space, a letter
# that only looks like ASCII, a `?`) is percent-encoded, so a name is always one plain word.
_NAME_SAFE = frozenset(string.ascii_letters + string.digits + "-._~%+!$'()*,:@/[];")


def loggable_url(path: str, query: str = "") -> str:
    """What of a request's URL may be logged: its path and the names of its query parameters.

    `path` is the decoded path that was routed; `query` the raw query string. A `?` in the
    path was sent encoded (`/me%3Faccess_token%3DT`): it stays encoded, and what follows it is
    logged as a query is, by its names.
    """
    path, question, rest = path.partition("?")
    logged = _loggable_path(path)
    if question:
        logged = f"{logged}%3F{query_names(rest)}"
    return f"{logged}?{query_names(query)}" if query else logged


def scrub_url(url: str) -> str:
    """`url` as found in a log line (a path, its query after the first `?`), as `loggable_url`."""
    path, question, query = url.partition("?")
    logged = _loggable_path(path)
    return f"{logged}?{query_names(query)}" if question else logged


def query_names(query: str) -> str:
    """The parameter names of a raw query string, `&`-separated, without their values.

    Split on `&` only, as Django and oauthlib split it: splitting on `;` too would turn the
    end of a value (`?a=1;T`) into a name. A name ends at its first `=` in any encoding.
    """
    names = [_loggable_name(part) for part in query.split("&") if part]
    if len(names) > MAX_NAMES:
        names[MAX_NAMES:] = [f"[+{len(names) - MAX_NAMES}]"]
    return "&".join(names)


def _loggable_name(part: str) -> str:
    equals = _EQUALS.search(part)
    name = part[: equals.start()] if equals else part
    name = "".join(char if char in _NAME_SAFE else _percent_encoded(char) for char in name)
    return name if len(name) <= MAX_NAME_LENGTH else LONG_NAME


def _loggable_path(path: str) -> str:
    return _escape_unprintable(_PATH_VALUE.sub(rf"\1{SCRUBBED}", path))


def _percent_encoded(char: str) -> str:
    return "".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))


def _escape_unprintable(text: str) -> str:
    """Control, format and separator characters as `\\xNN`/`\\uNNNN`: no forged lines in plain
    text logs, no right-to-left override or invisible character in what a person reads."""
    if text.isprintable():
        return text
    return "".join(
        char if char.isprintable() else f"\\x{ord(char):02x}" if ord(char) < 0x100
        else f"\\u{ord(char):04x}" if ord(char) < 0x10000 else f"\\U{ord(char):08x}"
        for char in text
    )  # fmt: skip


# --- Free text: URLs found word by word, secrets named in forms and JSON ---------------------

_WHITESPACE = re.compile(r"(\s+)")
# Around a URL quoted in a line: `"https://…"` (a referer), `('https://…')` (a repr), JSON, a
# sentence's full stop: put back as they were (at worst a value's last character, never more).
_LEADING = "\"'(<[{"
_TRAILING = "\"'>)]},.;"
# Outside URLs, a `name=value` whose name says it is a secret: compared with the name's letters
# and digits only, accents and compatibility forms folded, so `access_token[]`, `Access-Token`
# and `accéss_token` are all `accesstoken`.
_SECRET_STEMS = ("token", "secret", "password", "passwd", "verifier", "authorization", "apikey")
_SECRET_NAMES = frozenset({"code"})
_NOT_SECRET = frozenset({"tokentype", "tokentypehint"})
_PARAM_SEPARATORS = re.compile(r"([&;])")
_JSON_PAIR = re.compile(r'("((?:[^"\\]|\\.)*)"\s*:\s*")((?:[^"\\]|\\.)*)(")')
_BEARER = re.compile(r"((?:Bearer|Basic)\s+)[A-Za-z0-9\-._~+/]+=*", re.I)
# Layers of percent-encoding looked through outside URLs, bounded so that a hostile word costs
# little.
_MAX_DECODINGS = 3


def scrub(text: str) -> str:
    """A log message without secrets: URLs as `scrub_url`, forms and JSON by their names,
    credentials of `Authorization` headers."""
    words = _WHITESPACE.split(text)
    for index in range(0, len(words), 2):
        words[index] = _scrub_word(words[index])
    text = _JSON_PAIR.sub(_scrub_json_pair, "".join(words))
    return _BEARER.sub(rf"\1{SCRUBBED}", text)


def is_secret_name(name: str) -> bool:
    """Whether a parameter or key of this name holds a secret (outside URLs' queries)."""
    folded = unicodedata.normalize("NFKD", name).casefold()
    letters = "".join(char for char in folded if char.isascii() and char.isalnum())
    if letters in _NOT_SECRET:
        return False
    return letters in _SECRET_NAMES or any(stem in letters for stem in _SECRET_STEMS)


def _scrub_word(word: str) -> str:
    core = word.lstrip(_LEADING)
    lead = word[: len(word) - len(core)]
    stripped = core.rstrip(_TRAILING)
    trail = core[len(stripped) :]
    if "?" in stripped or stripped.startswith("/") or "://" in stripped:
        return f"{lead}{scrub_url(stripped)}{trail}"
    if "=" in word or "%" in word:
        return _escape_unprintable(_scrub_params(word, 0))
    return _escape_unprintable(word)


def _scrub_params(text: str, depth: int) -> str:
    parts = _PARAM_SEPARATORS.split(text)
    for index in range(0, len(parts), 2):
        parts[index] = _scrub_param(parts[index], depth)
    return "".join(parts)


def _scrub_param(param: str, depth: int) -> str:
    name, equals, value = param.partition("=")
    if equals and value and is_secret_name(unquote_plus(name)):
        return f"{param[: len(param) - len(value)]}{SCRUBBED}"
    decoded = unquote(param)
    if decoded != param and depth < _MAX_DECODINGS:
        # A name or `=` hidden under percent-encoding (`access_token%3DT`): shown decoded
        # when that hides a secret.
        scrubbed = _scrub_params(decoded, depth + 1)
        if scrubbed != decoded:
            return scrubbed
    return param


def _scrub_json_pair(match: re.Match) -> str:
    if not is_secret_name(match.group(2)):
        return match.group()
    return f"{match.group(1)}{SCRUBBED}{match.group(4)}"


class ScrubTokensFilter(logging.Filter):
    """Rewrites the record's message in place, so every later handler sees the clean text."""

    # Formats a record's traceback for `exc_text`, which formatters print as it is.
    _tracebacks = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == "gunicorn.access" and isinstance(record.args, dict):
            # Gunicorn's `%(q)s` atom is the bare query string, without a `?` that marks it.
            query = record.args.get("q")
            if isinstance(query, str):
                record.args["q"] = query_names(query)
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            return True  # a malformed record is logging's own problem to report
        cleaned = scrub(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and record.exc_info[0] is not None:
            # An exception's message may quote a URL with its query, or a request's body.
            text = record.exc_text or self._tracebacks.formatException(record.exc_info)
            record.exc_text = scrub(text)
        return True


# Loggers whose records never reach the scrubbing console handler on their own.
ACCESS_LOGGERS = ("django.server", "django.request", "gunicorn.access", "gunicorn.error")


def install_token_scrubbing() -> None:
    """Attach the filter to the access loggers (idempotent; called when Django starts).

    Logger-level filters run before any handler, including the ones Django's default logging
    and gunicorn attach to these loggers, which settings.LOGGING does not reach.
    """
    for name in ACCESS_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, ScrubTokensFilter) for f in logger.filters):
            logger.addFilter(ScrubTokensFilter())


# --- The request being served, on every record ----------------------------------------------

# Set by `ticketing.middleware.RequestIdMiddleware` for the request being served: every record
# written meanwhile carries it, whichever logger wrote it.
request_id_var: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "request_id", default=None
)


def current_request_id() -> str | None:
    return request_id_var.get()


class RequestIdFilter(logging.Filter):
    """Stamp every record with the id of the request being served (`-` outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "request_id", None):
            record.request_id = request_id_var.get() or "-"
        return True


# --- One JSON object per line, for log shippers (production's stdout) -----------------------

# Record attributes worth shipping when a logger sets them through `extra=`.
_EXTRA_FIELDS = ("http_method", "http_path", "http_status", "duration_ms", "status_code")


class JsonFormatter(logging.Formatter):
    """Fields: `time` (ISO 8601, UTC), `level`, `logger`, `message`, `request_id`, the `http_*`
    and `duration_ms` fields of access lines, `status_code` of Django's request errors, and
    `exc_type` / `exc` (the traceback) when an exception is attached. Tracebacks go to the log,
    never to a response body."""

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
