"""`/oauth/...` (CONTRACT §1): DOT's protocol endpoints plus the sign-in pages, the
authorization server's metadata (RFC 8414) and the admin's sign-in, throttled like ours.

The spec writes `/oauth/authorize` and `/oauth/token` without a trailing slash and DOT with
one; both spellings are served, so no client depends on APPEND_SLASH redirects (a redirected
POST loses its body).
"""

from django.contrib import admin
from django.urls import include, path, re_path

from . import views

protocol_patterns = [
    re_path(r"^oauth/authorize/?$", views.ConsentView.as_view(), name="authorize"),
    re_path(r"^oauth/token/?$", views.TokenView.as_view(), name="token"),
    re_path(r"^oauth/revoke_token/?$", views.RevokeTokenView.as_view(), name="revoke-token"),
    re_path(r"^oauth/introspect/?$", views.IntrospectTokenView.as_view(), name="introspect"),
    path(
        ".well-known/oauth-authorization-server",
        views.ServerMetadataView.as_view(),
        name="oauth-server-metadata",
    ),
]

urlpatterns = [
    # DOT reverses its own views under this namespace (the metadata's URLs, `iss`).
    path("", include((protocol_patterns, "oauth2_provider"))),
    re_path(r"^oauth/login/?$", views.sign_in_throttled(views.LoginView.as_view()), name="login"),
    re_path(r"^oauth/logout/?$", views.LogoutView.as_view(), name="logout"),
    # Before the admin's own URLs, so its sign-in is this one.
    path("admin/login/", views.sign_in_throttled(admin.site.login), name="admin-login"),
]
