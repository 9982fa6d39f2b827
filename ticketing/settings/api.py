"""The public API's framework settings: Django REST framework's and drf-spectacular's (the
OpenAPI document). Constants only; base.py takes them as they are."""

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["oauth_setup.authentication.OAuth2TokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["ticketing.api.permissions.HasValidToken"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": [
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
        "rest_framework.parsers.JSONParser",
    ],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "ticketing.api.pagination.PagePagination",
    "DEFAULT_THROTTLE_CLASSES": ["ticketing.api.throttling.TokenRateThrottle"],
    "EXCEPTION_HANDLER": "ticketing.api.exception_handler.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "ticketing.api.openapi.ApiAutoSchema",
    "UNAUTHENTICATED_USER": None,
    "DATETIME_FORMAT": "iso-8601",
    "COERCE_DECIMAL_TO_STRING": True,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Event Ticketing Public API",
    "DESCRIPTION": "Events, tickets, orders and check-in for organizers and their integrations.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": "/api/public",
    "COMPONENT_SPLIT_REQUEST": True,
    # Bodies are documented as JSON only, though forms are parsed too (CONTRACT §1): a body
    # listed under several media types makes generated clients send all of them at once.
    "PARSER_WHITELIST": ["rest_framework.parsers.JSONParser"],
    "PREPROCESSING_HOOKS": ["ticketing.api.openapi.public_api_only"],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "webhooks.openapi.webhooks_described",
        "tickets.openapi.signed_codes_described",
        "ticketing.api.openapi.int32_integers",
    ],
    "ENUM_NAME_OVERRIDES": {
        "EventStatusEnum": "events.models.Event.Status",
        "TicketStatusEnum": "tickets.models.Ticket.Status",
        "TicketKindEnum": "tickets.models.Ticket.Kind",
        "TicketTypeStatusEnum": ["on_sale", "hidden", "closed", "sold_out"],
        "OrderStatusEnum": "tickets.models.Order.Status",
        "SuccessTrueEnum": [(True, True)],
        "SuccessFalseEnum": [(False, False)],
    },
    "TAGS": [
        {"name": "Service", "description": "Version and status."},
        {"name": "User", "description": "The authenticated user."},
        {"name": "Organizers", "description": "Organizers the caller may act for."},
        {"name": "Events", "description": "An organizer's events, ticket types, check-in types."},
        {"name": "Tickets", "description": "Ticket lists, searches and creation."},
        {"name": "Check-in", "description": "Check-in, renew (undo) and invalidate at the gate."},
        {"name": "Orders", "description": "The user's orders."},
        {"name": "Webhooks", "description": "An organizer's webhook endpoints (owners, admins)."},
    ],
    "SERVE_AUTHENTICATION": [],
    "SERVE_PERMISSIONS": ["ticketing.api.permissions.AllowAnyone"],
    # The docs' Authorize: authorization code with PKCE (S256) against /oauth/authorize and
    # /oauth/token, back to /api/public/docs/oauth2-redirect.html (ticketing.api.schema_urls).
    "SWAGGER_UI_OAUTH2_CONFIG": {"usePkceWithAuthorizationCodeGrant": True},
}
