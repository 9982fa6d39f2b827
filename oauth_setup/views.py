"""The OAuth 2.0 endpoints at the site root (CONTRACT §4), built on django-oauth-toolkit.

DOT does the protocol; these subclasses add what the contract asks on top: a consent page that
names the application and its organizer and is never skipped for a public client, limits on
guessing credentials, introspection limited to the token's own application, answers in the
RFC 6749 error shape when the database is down, and a login page that says which application
is asking.
"""

import json
from functools import wraps
from urllib.parse import parse_qs, parse_qsl, urlencode, urlparse, urlsplit, urlunsplit

from django import forms
from django.conf import settings
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.response import TemplateResponse
from django.utils.decorators import method_decorator
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.debug import sensitive_post_parameters
from oauth2_provider import views as dot_views
from oauth2_provider.forms import AllowForm
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.signals import app_authorized
from oauthlib import common as oauthlib_common

from ticketing.api.exception_handler import service_unavailable

from .scopes import scope_explanations
from .selectors import access_token_visible_to, application_for_consent
from .throttling import Refusal, client_attempt, sign_in_attempt


def oauth_error(error: str, description: str, *, status: int, retry_after: int) -> JsonResponse:
    """An RFC 6749 §5.2 error body, for answers DOT does not give itself."""
    return JsonResponse(
        {"error": error, "error_description": description},
        status=status,
        headers={"Retry-After": str(retry_after), "Cache-Control": "no-store"},
    )


class ConsentForm(AllowForm):
    # Whether the client named its redirect URI at /oauth/authorize: then the token request
    # must name it too (RFC 6749 §4.1.3). The URI itself is always in the form.
    redirect_uri_named = forms.BooleanField(required=False, widget=forms.HiddenInput())


@method_decorator(never_cache, name="dispatch")  # a consent form is per person and per moment
class ConsentView(dot_views.AuthorizationView):
    """`/oauth/authorize`: login (via LoginRequiredMixin), then consent; Deny → access_denied."""

    template_name = "oauth2_provider/authorize.html"
    form_class = ConsentForm

    def get(self, request, *args, **kwargs):
        if request.GET.get("approval_prompt") == "auto":
            application = application_for_consent(client_id=request.GET.get("client_id"))
            if application is not None and application.client_type == application.CLIENT_PUBLIC:
                # DOT's `auto` skips the page when the person once agreed; for a public
                # client anyone can send, only a click now says the request is theirs.
                request.GET = request.GET.copy()
                request.GET["approval_prompt"] = "force"
        return super().get(request, *args, **kwargs)

    def get_initial(self):
        return {**super().get_initial(), "redirect_uri_named": "redirect_uri" in self.request.GET}

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

    def create_authorization_response(self, request, scopes, credentials, allow):
        if request.method == "GET":  # consent skipped: the request itself says
            named = "redirect_uri" in request.GET
        else:
            named = request.POST.get("redirect_uri_named") != "False"
        credentials = {**credentials, "redirect_uri_named": named}
        return super().create_authorization_response(request, scopes, credentials, allow)

    def redirect(self, redirect_to, application):
        # DOT adds `iss` (RFC 9207) to the responses oauthlib builds, not to the errors it
        # raises itself (access_denied, errors found before consent): every one carries it.
        issuer = oauth2_settings.oauth2_authorization_server_issuer(self.request)
        return super().redirect(with_issuer(redirect_to, issuer), application)


def with_issuer(uri: str, issuer: str) -> str:
    """`uri` with `iss` as its one issuer (RFC 9207), added to the query as DOT adds it.

    Responses here are never in the fragment (only the code flow is on offer) and a
    registered redirect URI has none.
    """
    parts = urlsplit(uri)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "iss"]
    query = urlencode([*query, ("iss", issuer)])
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


class OAuthEndpointMixin:
    """Limits guessing client secrets; a database outage is an RFC 6749 error, not a 500.

    A response in `failed_statuses` is a failed client authentication. Views using it are
    `csrf_exempt` again, as DOT's: `as_view` reads that mark from the outermost `dispatch`.
    """

    failed_statuses = frozenset({401})
    token_request = False  # counted per address, failed or not (TOKEN_RATE_LIMIT)

    def dispatch(self, request, *args, **kwargs):
        try:
            attempt = client_attempt(request, token_request=self.token_request)
            refusal = attempt.check(request)
            if refusal is not None:
                return oauth_error(
                    "rate_limited",
                    refusal_message(refusal),
                    status=429,
                    retry_after=refusal.retry_after,
                )
            response = super().dispatch(request, *args, **kwargs)
            if response.status_code in self.failed_statuses:
                attempt.failed(request)
            return response
        except Exception as exc:
            unavailable = service_unavailable(exc)
            if unavailable is None:
                raise
            return oauth_error(
                "temporarily_unavailable",
                unavailable.message,
                status=503,
                retry_after=int(unavailable.headers["Retry-After"]),
            )


def refusal_message(refusal: Refusal) -> str:
    if refusal.failures:
        why = "Too many failed client authentications"
    else:
        why = "Too many token requests from this address"
    return f"{why}; try again in {refusal.retry_after} seconds."


@method_decorator(csrf_exempt, name="dispatch")
class TokenView(OAuthEndpointMixin, dot_views.TokenView):
    """`POST /oauth/token`, also limited per client address (CONTRACT §4), failed or not.

    The 429 keeps the RFC 6749 error shape that OAuth clients already parse.
    """

    token_request = True

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        # Every grant, the device grant's name too, goes to the server, which knows only the
        # grants on offer (oauth_setup.server).
        return self.authorization_flow_token_response(request, *args, **kwargs)

    @method_decorator(sensitive_post_parameters("password", "client_secret"))
    def authorization_flow_token_response(self, request, *args, **kwargs) -> HttpResponse:
        # DOT's reads the new token back to send `app_authorized` with it: a query per token
        # for a signal nothing here listens to. Its answer is the server's, as here.
        if app_authorized.has_listeners(self):
            return super().authorization_flow_token_response(request, *args, **kwargs)
        _url, headers, body, status = self.create_token_response(request)
        return HttpResponse(content=body, status=status, headers=headers)


@method_decorator(csrf_exempt, name="dispatch")
class RevokeTokenView(OAuthEndpointMixin, dot_views.RevokeTokenView):
    """`POST /oauth/revoke_token` (RFC 7009): DOT revokes only the caller's own tokens."""


@method_decorator(csrf_exempt, name="dispatch")
class IntrospectTokenView(OAuthEndpointMixin, dot_views.IntrospectTokenView):
    """`/oauth/introspect` (RFC 7662), answering about the caller's own tokens only.

    A platform application may ask about any token; any other application learns nothing
    about another's tokens: `{"active": false}`, as for a token that does not exist (§2.2).
    """

    failed_statuses = frozenset({401, 403})  # DOT refuses an unauthenticated caller with 403
    caller = None

    def dispatch(self, request, *args, **kwargs):
        # An answer describes a live token (its scope, user, expiry): no cache may keep it
        # (RFC 7662 §4), nor a refusal.
        response = super().dispatch(request, *args, **kwargs)
        response["Cache-Control"] = "no-store"
        return response

    def authenticate_client(self, request):
        # As DOT's OAuthLibCore.authenticate_client, keeping the client it authenticated.
        core = self.get_oauthlib_core()
        oauth_request = oauthlib_common.Request(
            oauthlib_uri(request),
            request.method,
            oauthlib_common.urlencode(core.extract_body(request)),
            core.extract_headers(request),
        )
        if not core.server.request_validator.authenticate_client(oauth_request):
            return False
        self.caller = oauth_request.client
        return True

    def get_token_response(self, token_value=None):
        if token_value is not None and not access_token_visible_to(
            token_value=token_value, application=self.caller
        ):
            return JsonResponse({"active": False})
        return super().get_token_response(token_value)


def oauthlib_uri(request: HttpRequest) -> str:
    """The request's path and query as oauthlib reads them (DOT passes the same).

    oauthlib refuses a query with a character a form-encoded one cannot hold, which Django
    lets through: those are percent-encoded.
    """
    parts = urlsplit(request.get_full_path())
    query = "".join(
        c if c in oauthlib_common.urlencoded else oauthlib_common.quote(c, safe=b"")
        for c in parts.query
    )
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


class ServerMetadataView(dot_views.OAuthServerMetadataView):
    """`/.well-known/oauth-authorization-server` (RFC 8414), URLs from the request's host."""

    def get(self, request, *args, **kwargs):
        metadata = json.loads(super().get(request, *args, **kwargs).content)
        # Public clients use the token endpoint without a secret; introspection needs one.
        metadata["introspection_endpoint_auth_methods_supported"] = [
            method
            for method in metadata["token_endpoint_auth_methods_supported"]
            if method != "none"
        ]
        return JsonResponse(metadata, headers={"Access-Control-Allow-Origin": "*"})


def sign_in_throttled(view):
    """Refuse sign-ins with 429 while the address or the username has failed too often.

    Wraps a Django login view: a POST it answers with the form again (200) failed.
    """

    @wraps(view)
    def throttled(request, *args, **kwargs):
        if request.method != "POST":
            return view(request, *args, **kwargs)
        attempt = sign_in_attempt(request)
        refusal = attempt.check(request)
        if refusal is not None:
            retry_after = refusal.retry_after
            return TemplateResponse(
                request,
                "registration/too_many_attempts.html",
                {"retry_after_minutes": -(-retry_after // 60)},
                status=429,
                headers={"Retry-After": str(retry_after), "Cache-Control": "no-store"},
            )
        response = view(request, *args, **kwargs)
        if response.status_code == 200:
            attempt.failed(request)
        return response

    return throttled


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
