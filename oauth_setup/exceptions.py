"""Domain errors of OAuth applications and tokens."""

from ticketing.api.exceptions import ServiceUnavailable


class TokenCacheUnavailable(ServiceUnavailable):
    """The token cache could not be told of a change; the change must not happen (a 503)."""

    default_message = "The token cache is unreachable; try again shortly."
