"""`/oauth/...` (CONTRACT §1): DOT's protocol endpoints plus the sign-in pages.

The spec writes `/oauth/authorize` and `/oauth/token` without a trailing slash and DOT with
one; both spellings are served, so no client depends on APPEND_SLASH redirects (a redirected
POST loses its body).
"""

from django.urls import include, re_path
from oauth2_provider import views as dot_views

from . import views

protocol_patterns = [
    re_path(r"^authorize/?$", views.ConsentView.as_view(), name="authorize"),
    re_path(r"^token/?$", views.RateLimitedTokenView.as_view(), name="token"),
    re_path(r"^revoke_token/?$", dot_views.RevokeTokenView.as_view(), name="revoke-token"),
    re_path(r"^introspect/?$", dot_views.IntrospectTokenView.as_view(), name="introspect"),
]

urlpatterns = [
    # DOT reverses its own views under this namespace.
    re_path(r"", include((protocol_patterns, "oauth2_provider"))),
    re_path(r"^login/?$", views.LoginView.as_view(), name="login"),
    re_path(r"^logout/?$", views.LogoutView.as_view(), name="logout"),
]
