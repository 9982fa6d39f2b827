"""How the OpenAPI document describes what this API shares: tokens, errors, list envelopes.

Views describe their own parameters and bodies (`@extend_schema`, filter sets, input
serializers). This module adds, to every operation, what follows from the shared plumbing:

- the security requirement the view's permission class declares (`openapi_security`, CONTRACT
  §3): user tokens (OAuth 2.0 authorization code, scopes `public`/`organizer`), application
  tokens (client credentials), the bearer header, or `access_token` in the query;
- the error responses the view can give (CONTRACT §2), each a component whose `error` lists the
  codes of that status, read from the exception classes (`api_error_codes`). A view may add
  statuses with `error_statuses = (409, 422)`; an `@extend_schema` response for an error status
  without a body gets the matching error body;
- the list envelope's items key (`events`, `tickets`, ...), from the view's `items_key`;
- the input rules every text input shares (no NUL; non-blank where blank is refused; query
  parameters never empty), and a serializer's own cross-field rules (`openapi_rules`), so that
  a request valid by the document is one the API accepts. Rules between fields are stated in
  shapes client generators still type: `not` on a body (an `anyOf` beside the properties
  would make the body an untyped union) and words on query parameters (which OpenAPI does not
  relate, and an object parameter is no parameter the API reads).
"""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import (
    ResolvedComponent,
    force_instance,
    is_basic_serializer,
)
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers

from .exceptions import api_error_codes
from .schema_rules import (
    boolean_input,
    key_rule,
    key_rule_as_not,
    key_rule_sentence,
    nested_rules,
    text_rules,
)
from .security import ANY_TOKEN, APPLICATION_TOKEN, BEARER, QUERY_TOKEN, USER_TOKEN

# Each permission class declares its security requirement (CONTRACT §3) as `openapi_security`
# and the statuses it can answer besides 401 as `openapi_errors`.
_DEFAULT_ERRORS = (403,)

# The error components by status; their codes are the exception classes' (`api_error_codes`).
ERRORS = {
    400: ("InvalidParametersError", "Invalid parameters."),
    401: (
        "UnauthorizedError",
        "Missing, malformed, expired or revoked token; or a token of another organizer's "
        "application.",
    ),
    403: (
        "ForbiddenError",
        "The token may not do this: scope, application owner, membership or token kind.",
    ),
    404: ("NotFoundError", "Not found, or belongs to another organizer."),
    405: ("MethodNotAllowedError", "Method not allowed."),
    409: ("ConflictError", "A unique value is taken."),
    422: (
        "UnprocessableError",
        "The request is valid but the ticket, order, event or quota does not allow it.",
    ),
    429: ("RateLimitedError", "Too many requests."),
    500: ("ServerError", "Unexpected error; logged, no details in the body."),
    503: (
        "ServiceUnavailableError",
        "Database unreachable or a conflict that persisted; retry after `Retry-After` seconds.",
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
    codes = api_error_codes()[status]
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
    if status in _REPLAYABLE:
        properties["replayed"] = {
            "type": "boolean",
            "description": "Present, and true, only on a check-in or renew that replays the "
            "first answer to its `scan_id`: nothing was changed.",
        }
    return {"type": "object", "required": required, "properties": properties}


# The statuses a gate's first answer to a scan id may have had, and so its replay (CONTRACT §7):
# 400 only for a scan an upload found malformed.
_REPLAYABLE = {400, 404, 409, 422}


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

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if schema and schema.get("type") == "array" and getattr(field, "max_items", None):
            schema["maxItems"] = field.max_items  # a list field's own limit (IdListField)
        return schema

    def _map_basic_serializer(self, serializer, direction):
        """A serializer's cross-field rules (`openapi_rules`, e.g. `exactly_one_of(...)`) and
        per-field refinements (`{"properties": {name: {...}}}`) apply to its input."""
        schema = super()._map_basic_serializer(serializer, direction)
        if direction != "request":
            return schema
        # After drf-spectacular's own validators, which would turn a pattern on a field that
        # may be blank into a `oneOf` that "" matches twice.
        for name, field in force_instance(serializer).fields.items():
            prop = schema["properties"].get(name)
            if isinstance(field, serializers.CharField) and prop is not None:
                text_rules(prop, blank=field.allow_blank or not field.trim_whitespace)
            if isinstance(field, serializers.BooleanField) and prop is not None:
                prop.pop("type")
                prop["anyOf"] = boolean_input(field)
        nested_rules(getattr(serializer, "openapi_rules", {}), schema)
        key_rule_as_not(schema)
        return schema

    def _get_request_body(self, direction="request"):
        """A body whose rules ask for some field (`openapi_rules`) is required, though no field
        is: generated clients then take the body as an argument, not an optional one."""
        body = super()._get_request_body(direction)
        if not body:
            return body
        serializer = self.get_request_serializer()
        if is_basic_serializer(serializer):
            component = self.resolve_serializer(serializer, direction)
            if {"not", "minProperties"} & set(component.schema):
                body["required"] = True
        return body

    def _process_override_parameters(self, direction="request"):
        """A parameter serializer becomes one query parameter per field. OpenAPI cannot relate
        parameters: a rule between them (`openapi_rules`) is said in each one's description."""
        result = super()._process_override_parameters(direction)
        for parameter in self.get_override_parameters():
            rule = key_rule(getattr(parameter, "openapi_rules", {}))
            if not is_basic_serializer(parameter) or rule is None:
                continue
            sentence = key_rule_sentence(*rule)
            for name in rule[0]:
                query = result[name, OpenApiParameter.QUERY]
                description = query.get("description")
                query["description"] = f"{description} {sentence}" if description else sentence
        return result

    def _permission_info(self) -> tuple[list, set[int]]:
        security: list = []
        statuses: set[int] = set()
        authenticated = True
        for permission in self.view.get_permissions():
            security = getattr(permission, "openapi_security", ANY_TOKEN)
            statuses.update(getattr(permission, "openapi_errors", _DEFAULT_ERRORS))
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
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "query":
                _query_rules(parameter["schema"])
        statuses.update(getattr(self.view, "error_statuses", ()))
        responses = operation.setdefault("responses", {})
        for code, response in responses.items():
            if code.isdigit() and int(code) in ERRORS and "content" not in response:
                statuses.add(int(code))
        for status in sorted(statuses):
            existing = responses.get(str(status))
            if existing and "content" in existing:
                continue
            name, description = ERRORS[status]
            codes = api_error_codes()[status]
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


def _query_rules(schema: dict) -> None:
    """A query parameter sent empty is a 400 (`ApiFilterSet`, serializer fields): the document
    says so with `minLength`/`minItems`."""
    if schema.get("type") == "string" and not {"enum", "format"} & set(schema):
        schema["minLength"] = max(schema.get("minLength", 0), 1)
        text_rules(schema, blank=True)
    elif schema.get("type") == "array":
        schema["minItems"] = max(schema.get("minItems", 0), 1)


class TokenAuthenticationScheme(OpenApiAuthenticationExtension):
    """The four ways to present a token; which ones an operation takes is `get_auth`'s."""

    target_class = "oauth_setup.authentication.OAuth2TokenAuthentication"
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
