"""How the OpenAPI document describes what this API shares: tokens, errors, list envelopes.

Views describe their own parameters and bodies (`@extend_schema`, filter sets, input
serializers). This module adds, to every operation, what follows from the shared plumbing:

- the security requirement of the view's permission class (CONTRACT §3): user tokens (OAuth 2.0
  authorization code, scopes `public`/`organizer`), application tokens (client credentials), the
  bearer header, or `access_token` in the query;
- the error responses the view can give (CONTRACT §2), each a component whose `error` lists the
  codes of that status. A view may add statuses with `error_statuses = (409, 422)`; an
  `@extend_schema` response for an error status without a body gets the matching error body;
- the list envelope's items key (`events`, `tickets`, ...), from the view's `items_key`.
"""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ResolvedComponent

from . import permissions

USER_TOKEN = "userToken"
APPLICATION_TOKEN = "applicationToken"
BEARER = "bearerToken"
QUERY_TOKEN = "accessTokenQuery"

_ANY_TOKEN = [{USER_TOKEN: []}, {APPLICATION_TOKEN: []}, {BEARER: []}, {QUERY_TOKEN: []}]
_USER_PUBLIC = [{USER_TOKEN: ["public"]}, {BEARER: []}, {QUERY_TOKEN: []}]
_ORGANIZER = [
    {USER_TOKEN: ["organizer"]},
    {APPLICATION_TOKEN: ["public"]},
    {BEARER: []},
    {QUERY_TOKEN: []},
]
_ORGANIZER_USER = [{USER_TOKEN: ["organizer"]}, {BEARER: []}, {QUERY_TOKEN: []}]

# Permission class → (security requirement, statuses it can answer besides 401).
# A permission class of another module may declare `openapi_security` and `openapi_errors`.
_PERMISSIONS = {
    permissions.AllowAnyone: ([], ()),
    permissions.HasValidToken: (_ANY_TOKEN, ()),
    permissions.UserToken: (_USER_PUBLIC, (403,)),
    permissions.UserOrganizerResource: (_USER_PUBLIC, (403, 404)),
    permissions.OrganizerResource: (_ORGANIZER, (403, 404)),
    permissions.OrganizerUserResource: (_ORGANIZER_USER, (403, 404)),
}

ERRORS = {
    400: ("InvalidParametersError", "Invalid parameters.", ["invalid_parameters"]),
    401: (
        "UnauthorizedError",
        "Missing, malformed, expired or revoked token; or a token of another organizer's "
        "application.",
        ["invalid_token", "organizer_mismatch"],
    ),
    403: (
        "ForbiddenError",
        "The token may not do this: scope, application owner, membership or token kind.",
        [
            "insufficient_scope",
            "application_not_owned",
            "not_organizer_member",
            "user_token_required",
            "forbidden",
        ],
    ),
    404: (
        "NotFoundError",
        "Not found, or belongs to another organizer.",
        ["not_found"],
    ),
    405: ("MethodNotAllowedError", "Method not allowed.", ["method_not_allowed"]),
    409: (
        "ConflictError",
        "A unique value is taken.",
        ["duplicate_external_id", "duplicate_reference_code", "duplicate_nfc_uid"],
    ),
    422: (
        "UnprocessableError",
        "The request is valid but the ticket, order, event or quota does not allow it.",
        [
            "quota_exceeded",
            "ticket_revoked",
            "ticket_already_used",
            "ticket_not_used",
            "order_not_paid",
            "event_not_active",
            "check_in_type_required",
        ],
    ),
    429: ("RateLimitedError", "Too many requests.", ["rate_limited"]),
    500: ("ServerError", "Unexpected error; logged, no details in the body.", ["server_error"]),
    503: (
        "ServiceUnavailableError",
        "Database unreachable or a conflict that persisted; retry after `Retry-After` seconds.",
        ["service_unavailable"],
    ),
}

_RETRY_AFTER = {
    "Retry-After": {"schema": {"type": "integer"}, "description": "Seconds to wait."},
}
_HEADERS = {
    401: {
        "WWW-Authenticate": {
            "schema": {"type": "string"},
            "description": 'RFC 6750 challenge, e.g. `Bearer error="invalid_token"`.',
        }
    },
    429: _RETRY_AFTER,
    503: _RETRY_AFTER,
}


def error_schema(status: int) -> dict:
    _, _, codes = ERRORS[status]
    properties = {
        "success": {"type": "boolean", "enum": [False]},
        "error": {"type": "string", "enum": codes, "description": "Stable snake_case code."},
        "message": {"type": "string", "description": "A sentence for humans."},
    }
    required = ["success", "error", "message"]
    if status == 400:
        properties["fields"] = {
            "type": "object",
            "description": "Messages per parameter name.",
            "additionalProperties": {"type": "array", "items": {"type": "string"}},
        }
        required.append("fields")
    if status == 422:
        properties["ticket"] = {
            "allOf": [{"$ref": "#/components/schemas/Ticket"}],
            "description": "The ticket as it is now, on a check-in, renew or revoke rejection.",
        }
    return {"type": "object", "required": required, "properties": properties}


class ApiAutoSchema(AutoSchema):
    def _get_paginator(self):
        paginator = super()._get_paginator()
        if paginator is not None:
            paginator.items_key = getattr(self.view, "items_key", "results")
        return paginator

    def get_serializer_name(self, serializer, direction) -> str:
        """Views nest their `InputSerializer` (STYLE §6), so the name says whose it is:
        `TicketCheckInView.InputSerializer` → `TicketCheckInInput`.
        """
        cls = serializer.__class__
        outer, _, inner = cls.__qualname__.rpartition(".")
        if not outer or "<locals>" in outer:
            return super().get_serializer_name(serializer, direction)
        outer = outer.split(".")[-1].removesuffix("View").removesuffix("Mixin")
        return outer + inner.removesuffix("Serializer")

    def _permission_info(self) -> tuple[list, set[int]]:
        security: list = []
        statuses: set[int] = set()
        authenticated = True
        for permission in self.view.get_permissions():
            declared = getattr(permission, "openapi_security", None)
            if declared is not None:
                security, extra = declared, getattr(permission, "openapi_errors", (403,))
            else:
                security, extra = _PERMISSIONS.get(type(permission), (_ANY_TOKEN, (403,)))
            statuses.update(extra)
            authenticated = authenticated and bool(security)
        if authenticated:
            statuses.add(401)
        return security, statuses

    def get_auth(self):
        super().get_auth()  # registers the security schemes of the authentication class
        security, _ = self._permission_info()
        return list(security)

    def get_operation(self, *args, **kwargs):
        operation = super().get_operation(*args, **kwargs)
        if operation is None:
            return None
        _, statuses = self._permission_info()
        statuses |= {429, 500, 503}
        if "{" in self.path:
            statuses.add(404)
        if operation.get("requestBody") or any(
            p.get("in") == "query" for p in operation.get("parameters", [])
        ):
            statuses.add(400)
        statuses.update(getattr(self.view, "error_statuses", ()))
        responses = operation.setdefault("responses", {})
        for code, response in responses.items():
            if code.isdigit() and int(code) in ERRORS and "content" not in response:
                statuses.add(int(code))
        for status in sorted(statuses):
            existing = responses.get(str(status))
            if existing and "content" in existing:
                continue
            name, description, codes = ERRORS[status]
            component = ResolvedComponent(
                name=name,
                type=ResolvedComponent.SCHEMA,
                object=name,
                schema=error_schema(status),
            )
            self.registry.register_on_missing(component)
            response = {
                "description": (existing or {}).get("description")
                or f"{description} `error`: {', '.join(codes)}.",
                "content": {"application/json": {"schema": component.ref}},
            }
            if status in _HEADERS:
                response["headers"] = _HEADERS[status]
            responses[str(status)] = response
        return operation


class TokenAuthenticationScheme(OpenApiAuthenticationExtension):
    """The four ways to present a token; which ones an operation takes is `get_auth`'s."""

    target_class = "ticketing.api.authentication.OAuth2TokenAuthentication"
    name = [USER_TOKEN, APPLICATION_TOKEN, BEARER, QUERY_TOKEN]

    def get_security_requirement(self, auto_schema):
        return None  # ApiAutoSchema.get_auth decides per permission class

    def get_security_definition(self, auto_schema):
        from django.conf import settings

        scopes = settings.OAUTH2_PROVIDER["SCOPES"]
        return [
            {
                "type": "oauth2",
                "description": "User token (authorization code grant, PKCE optional for "
                "confidential clients). Scope `public`: the user's own resources; `organizer`: "
                "the resources of organizers the user belongs to.",
                "flows": {
                    "authorizationCode": {
                        "authorizationUrl": "/oauth/authorize",
                        "tokenUrl": "/oauth/token",
                        "refreshUrl": "/oauth/token",
                        "scopes": scopes,
                    }
                },
            },
            {
                "type": "oauth2",
                "description": "Application token (client credentials, legacy): always scope "
                "`public`, which grants the owning organizer's resources.",
                "flows": {
                    "clientCredentials": {
                        "tokenUrl": "/oauth/token",
                        "scopes": {"public": scopes["public"]},
                    }
                },
            },
            {
                "type": "http",
                "scheme": "bearer",
                "description": "Either kind of access token in `Authorization: Bearer <token>`.",
            },
            {
                "type": "apiKey",
                "in": "query",
                "name": "access_token",
                "description": "Either kind of access token as the `access_token` query "
                "parameter (GET) or body field (POST).",
            },
        ]


def public_api_only(endpoints, **kwargs):
    """Preprocessing hook: the document covers /api/public only, not itself or its docs."""
    return [
        (path, path_regex, method, callback)
        for path, path_regex, method, callback in endpoints
        if path.startswith("/api/public/")
        and not path.startswith(("/api/public/schema", "/api/public/docs"))
    ]


def int32_integers(result, **kwargs):
    """Postprocessing hook: every integer of this API is an int32 (ids, satangs, counts)."""

    def walk(node):
        if isinstance(node, dict):
            if node.get("type") == "integer" and "format" not in node:
                node["format"] = "int32"
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(result)
    return result
