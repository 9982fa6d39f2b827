"""The OAuth 2.0 endpoints at the site root (CONTRACT §4), built on django-oauth-toolkit.

DOT does the protocol; these subclasses add what the contract asks on top: a consent page that
names the application and its organizer, a per-address limit on the token endpoint, and a
login page that says which application is asking.
"""

from urllib.parse import parse_qs, urlparse

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.decorators import method_decorator
from django.views.decorators.cache import never_cache
from django_ratelimit.core import get_usage
from oauth2_provider import views as dot_views

from .scopes import scope_explanations
from .selectors import application_for_consent


@method_decorator(never_cache, name="dispatch")  # a consent form is per person and per moment
class ConsentView(dot_views.AuthorizationView):
    """`/oauth/authorize`: login (via LoginRequiredMixin), then consent; Deny → access_denied."""

    template_name = "oauth2_provider/authorize.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        application = context.get("application")
        if application is not None:
            # DOT loads the bare application; the page also names its owner.
            context["application"] = application_for_consent(application_id=application.pk)
        context["scope_items"] = scope_explanations(context.get("scopes") or [])
        redirect_uri = context.get("redirect_uri")
        context["redirect_host"] = urlparse(redirect_uri).netloc if redirect_uri else None
        return context

    def form_invalid(self, form):
        # The hidden fields came back altered or missing: there is nothing sound to consent to
        # nor a verified redirect URI to report to, so say so here.
        context = self.get_context_data(form=form, incomplete=True)
        return self.render_to_response(context, status=400)


class RateLimitedTokenView(dot_views.TokenView):
    """`POST /oauth/token`, limited per client address (CONTRACT §4) against secret guessing.

    The 429 keeps the RFC 6749 error shape that OAuth clients already parse.
    """

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        usage = get_usage(
            request,
            group="oauth-token",
            key="ip",
            rate=settings.TOKEN_RATE_LIMIT,
            increment=True,
        )
        if usage is not None and usage["should_limit"]:
            retry_after = max(1, int(usage["time_left"]))
            return JsonResponse(
                {
                    "error": "rate_limited",
                    "error_description": (
                        f"Too many token requests from this address; "
                        f"try again in {retry_after} seconds."
                    ),
                },
                status=429,
                headers={"Retry-After": str(retry_after), "Cache-Control": "no-store"},
            )
        return super().post(request, *args, **kwargs)


class LoginView(auth_views.LoginView):
    """The sign-in page; when it guards an authorization request it names the application."""

    template_name = "registration/login.html"
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["application"] = _application_in_next(self.get_redirect_url())
        return context


class LogoutView(auth_views.LogoutView):
    """POST only (Django 5); returns to `next` (the authorization request) or the login page."""

    next_page = settings.LOGIN_URL


def _application_in_next(next_url: str) -> object | None:
    if not next_url:
        return None
    client_ids = parse_qs(urlparse(next_url).query).get("client_id")
    if not client_ids:
        return None
    return application_for_consent(client_id=client_ids[0])
