"""django-oauth-toolkit's settings (CONTRACT §4): scopes, lifetimes, rotation and the RFC 9700
choices. base.py takes them as they are."""

from .env import env_int

OAUTH2_PROVIDER = {
    "SCOPES": {
        "public": "Your profile, and your own tickets and orders",
        "organizer": "All orders and tickets of the events of organizers you belong to",
    },
    "DEFAULT_SCOPES": ["public"],
    "ACCESS_TOKEN_EXPIRE_SECONDS": 7200,
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    # A used refresh token presented again is reuse, however soon: refused, and its family
    # revoked (CONTRACT §4), so a stolen copy is caught. Opt-in, a second refresh within this
    # many seconds gets its own pair instead (oauth_setup.validators; DOT's check E001), for
    # clients that refresh in parallel or retry a lost answer, at the price of not detecting
    # a thief who uses the token within the window (deploy/README.md).
    "REFRESH_TOKEN_GRACE_PERIOD_SECONDS": env_int("REFRESH_TOKEN_GRACE_SECONDS", 0),
    "REFRESH_TOKEN_EXPIRE_SECONDS": 60 * 60 * 24 * 30,
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https"],
    "OAUTH2_SERVER_CLASS": "oauth_setup.server.TicketingServer",
    "OAUTH2_VALIDATOR_CLASS": "oauth_setup.validators.TicketingOAuth2Validator",
    # Client secrets are generated: a slow password hash guards nothing and costs every
    # client-credentials token most of a second of CPU (oauth_setup.hashers).
    "CLIENT_SECRET_HASHER": "client_secret_pbkdf2_sha256",
    # PKCE is required of public clients only: TicketingOAuth2Validator.is_pkce_required.
    "PKCE_REQUIRED": True,
    # OAuth 2.0 Security BCP (RFC 9700): no implicit or password grant, PKCE only as S256,
    # `iss` on authorization responses (RFC 9207), tokens kept only as hashes at rest.
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "ALLOWED_SCHEMES": ["http", "https"],
    # RFC 8414 metadata: what oauth_setup.server offers.
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "client_credentials", "refresh_token"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": [
        "client_secret_basic",
        "client_secret_post",
        "none",  # public clients, with PKCE
    ],
}
