"""The OAuth 2.0 server: only the grants this service offers (CONTRACT §4, RFC 9700 §2).

oauthlib's all-in-one `Server` also carries the implicit, password and device grants, and
DOT's RFC 9700 gates refuse the first two only after the client and, for the password grant,
the user's password were checked: `invalid_grant` for a wrong password and
`unauthorized_client` for a right one made the token endpoint a password oracle. Without
those grants in the server, oauthlib answers `unsupported_grant_type` and
`unsupported_response_type` before it looks at any credential.
"""

from oauthlib.oauth2.rfc6749.endpoints import (
    AuthorizationEndpoint,
    IntrospectEndpoint,
    ResourceEndpoint,
    RevocationEndpoint,
    TokenEndpoint,
)
from oauthlib.oauth2.rfc6749.grant_types import (
    AuthorizationCodeGrant,
    ClientCredentialsGrant,
    RefreshTokenGrant,
)
from oauthlib.oauth2.rfc6749.tokens import BearerToken


class TicketingServer(
    AuthorizationEndpoint, IntrospectEndpoint, TokenEndpoint, ResourceEndpoint, RevocationEndpoint
):
    """Authorization code (with PKCE), client credentials and refresh; Bearer tokens."""

    def __init__(
        self,
        request_validator,
        token_expires_in=None,
        token_generator=None,
        refresh_token_generator=None,
        **device_flow_kwargs,  # DOT passes the device grant's settings; there is no such grant
    ):
        code = AuthorizationCodeGrant(request_validator)
        bearer = BearerToken(
            request_validator, token_generator, token_expires_in, refresh_token_generator
        )
        AuthorizationEndpoint.__init__(
            self,
            default_response_type="code",
            response_types={"code": code},
            default_token_type=bearer,
        )
        TokenEndpoint.__init__(
            self,
            default_grant_type="authorization_code",
            grant_types={
                "authorization_code": code,
                "client_credentials": ClientCredentialsGrant(request_validator),
                "refresh_token": RefreshTokenGrant(request_validator),
            },
            default_token_type=bearer,
        )
        ResourceEndpoint.__init__(self, default_token="Bearer", token_types={"Bearer": bearer})
        RevocationEndpoint.__init__(self, request_validator)
        IntrospectEndpoint.__init__(self, request_validator)
