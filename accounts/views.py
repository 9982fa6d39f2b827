"""`GET /me` and `GET /info` (spec, CONTRACT §5 and §9)."""

from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from ticketing.api.caller import caller_of
from ticketing.api.permissions import AllowAnyone, UserToken
from ticketing.api.throttling import UserRateThrottle

from .selectors import service_version
from .serializers import UserSerializer

# Bodies come from the shared error components (ticketing.api.openapi); these say when.
ME_ERRORS = {
    401: OpenApiResponse(description="`invalid_token`: missing, malformed, expired or revoked."),
    403: OpenApiResponse(
        description="`user_token_required` (an application token) or `insufficient_scope` "
        "(no `public`)."
    ),
    429: OpenApiResponse(description="`rate_limited`: 10 a minute per user; see `Retry-After`."),
}


class MeView(APIView):
    """The token's user, at the top level without a `success` wrapper (spec, GET /me)."""

    permission_classes = [UserToken]
    throttle_classes = [UserRateThrottle]

    @extend_schema(
        operation_id="me_retrieve",
        summary="The authenticated user's profile",
        description="Needs a user token with scope `public`. Limited to 10 requests a minute "
        "per user (429 `rate_limited` with `Retry-After`).",
        responses={200: UserSerializer, **ME_ERRORS},
        tags=["User"],
    )
    def get(self, request):
        user = caller_of(request).user  # loaded with the token: no query here
        return Response(UserSerializer(user, context={"request": request}).data)


class InfoView(APIView):
    """Name, version and liveness of the API; no token, no database, no rate limit: load
    balancers and uptime checks may call it as often as they like."""

    # Also the framework baseline of the benchmarks.

    authentication_classes = []
    permission_classes = [AllowAnyone]
    throttle_classes = []

    @extend_schema(
        operation_id="info_retrieve",
        summary="API name, version and status",
        auth=[],
        responses={
            200: inline_serializer(
                "Info",
                {
                    "success": serializers.BooleanField(),
                    "name": serializers.CharField(),
                    "version": serializers.CharField(),
                    "status": serializers.ChoiceField(choices=["ok"]),
                    "time": serializers.DateTimeField(),
                },
            )
        },
        tags=["Service"],
    )
    def get(self, request):
        return Response(
            {
                "success": True,
                "name": "Event Ticketing Public API",
                "version": service_version(),
                "status": "ok",
                "time": timezone.localtime().isoformat(timespec="seconds"),
            }
        )
