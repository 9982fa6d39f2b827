"""Errors Django answers before or outside any DRF view: the API's unknown routes and the
project's handler400/404/500. JSON in the contract's shape under /api/public, HTML elsewhere.
"""

import sys

from django.conf import settings
from django.http import HttpResponse, HttpResponsePermanentRedirect, JsonResponse
from django.urls import is_valid_path
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt

from .error_body import application_error_body, error_body
from .error_causes import service_unavailable
from .exceptions import InvalidParameters, NotFound, ServerError


def _is_api(request) -> bool:
    return request.path.startswith("/api/public/")


def _no_such_endpoint() -> JsonResponse:
    return JsonResponse(error_body(NotFound.code, "No such endpoint."), status=404)


@csrf_exempt  # no view to protect: a POST gets the same 404 as a GET
def unknown_route(request):
    """The last route under /api/public: any path no other route matches, any method.

    A route rather than `handler404`, because with DEBUG on Django answers a path that matches
    no route with its HTML debug page and never calls `handler404` (CONTRACT §2: one shape
    whatever DEBUG is). Matching every path also stops CommonMiddleware's APPEND_SLASH, so a
    GET of a route without its trailing slash (`/api/public/docs`) is redirected here instead.
    """
    if (
        request.method in ("GET", "HEAD")
        and settings.APPEND_SLASH
        and not request.path_info.endswith("/")
    ):
        match = is_valid_path(f"{request.path_info}/", getattr(request, "urlconf", None))
        if match and match.func is not unknown_route:
            return HttpResponsePermanentRedirect(request.get_full_path(force_append_slash=True))
    return _no_such_endpoint()


def not_found(request, exception=None):
    """Django-level 404 (an Http404 raised outside DRF): JSON under /api/public, HTML elsewhere."""
    if _is_api(request):
        return _no_such_endpoint()
    return defaults.page_not_found(request, exception)


def bad_request(request, exception=None):
    """Suspicious or oversized requests rejected before any view ran."""
    if _is_api(request):
        body = application_error_body(InvalidParameters("Bad request."))
        return JsonResponse(body, status=400)
    return defaults.bad_request(request, exception)


def server_error(request):
    """Django-level 500: an exception no view handled (middleware, token lookup, a bug).

    Django calls this inside its `except` block, so the exception is at hand: a database
    outage (or a revocation the token cache cannot record) raised outside a DRF view is still
    a 503 with Retry-After, never a 500.
    """
    unavailable = service_unavailable(sys.exc_info()[1])
    if unavailable is not None:
        if _is_api(request) or request.path == "/healthz":
            response = JsonResponse(application_error_body(unavailable), status=503)
        else:
            response = HttpResponse(
                unavailable.message, status=503, content_type="text/plain; charset=utf-8"
            )
        for name, value in unavailable.headers.items():
            response[name] = value
        return response
    if _is_api(request):
        return JsonResponse(application_error_body(ServerError()), status=500)
    return defaults.server_error(request)
