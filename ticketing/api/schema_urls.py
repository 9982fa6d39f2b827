"""The OpenAPI document (`/schema/`) and a browsable reference (`/docs/`), CONTRACT §1.

The reference is Swagger UI served from the drf-spectacular-sidecar package, so it works
without reaching a CDN. Its Authorize button runs the authorization-code flow with PKCE in a
popup, which comes back to `/docs/oauth2-redirect.html` (Swagger UI's default redirect URL,
beside the page): an application must register that exact URI to be used from the docs.
"""

from pathlib import Path

import drf_spectacular_sidecar
from django.urls import path, re_path, reverse
from django.views.static import serve
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from .permissions import AllowAnyone

SWAGGER_UI_DIST = Path(drf_spectacular_sidecar.__file__).parent / (
    "static/drf_spectacular_sidecar/swagger-ui-dist"
)


class SchemaView(SpectacularAPIView):
    """YAML by default; JSON for `Accept: application/json` or `?format=json`."""

    authentication_classes = []
    permission_classes = [AllowAnyone]


class DocsView(SpectacularSwaggerView):
    authentication_classes = []
    permission_classes = [AllowAnyone]
    url_name = "api-schema"

    def get(self, request, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        # drf-spectacular sends `unsafe-none`, for sign-in popups of another origin. Ours is
        # this origin, whose pages are all `same-origin` (SecurityMiddleware): the popup keeps
        # its opener, to hand the code back, only if this page is `same-origin` too.
        response["Cross-Origin-Opener-Policy"] = "same-origin"
        return response

    def _swagger_ui_resource(self, filename):
        return reverse("api-docs-asset", kwargs={"path": filename})

    def _swagger_ui_favicon(self):
        return reverse("api-docs-asset", kwargs={"path": "favicon-32x32.png"})


def docs_asset(request, path: str):
    """Swagger UI's own files; `serve` refuses paths outside the directory."""
    response = serve(request, path, document_root=SWAGGER_UI_DIST)
    response["Cache-Control"] = "public, max-age=86400"
    return response


urlpatterns = [
    path("schema/", SchemaView.as_view(), name="api-schema"),
    path("docs/", DocsView.as_view(), name="api-docs"),
    re_path(r"^docs/assets/(?P<path>[\w.-]+)$", docs_asset, name="api-docs-asset"),
    # The popup's landing page hands the code to the docs page; it loads its script beside it.
    re_path(
        r"^docs/(?P<path>oauth2-redirect\.(?:html|js))$",
        docs_asset,
        name="api-docs-oauth2-redirect",
    ),
]
