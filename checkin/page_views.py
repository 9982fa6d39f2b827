"""The staff check-in page (CONTRACT §15): the page itself and the token it calls the API with.

Both need a signed-in user (the site's login page, the one OAuth uses) who belongs to some
organizer. The page is static apart from its configuration (the user's events, labels); the
scanning, the check-ins and the counts are API calls made by its script.
"""

from __future__ import annotations

import hashlib
import json
import secrets

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.staticfiles import finders
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.templatetags.static import static
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST
from django_ratelimit.core import get_usage

from organizers.permissions import user_organizer_ids
from ticketing.api.exception_handler import error_body
from ticketing.api.exceptions import RateLimited
from ticketing.dates import human_date, intl_locale

from .page_selectors import events_for_check_in, last_check_in
from .services.page_tokens import page_token_issue

# Only this site's own scripts, styles and API; the camera stream is a local blob.
# 'wasm-unsafe-eval' lets the QR decoder compile its WebAssembly (and allows no eval()).
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self' 'wasm-unsafe-eval'",
        "style-src 'self'",
        "img-src 'self' data: blob:",
        "media-src 'self' blob: mediastream:",
        "connect-src 'self'",
        "worker-src 'self'",
        "manifest-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ]
)


# zxing-cpp's WebAssembly reader: where the browser has no BarcodeDetector for QR codes.
DECODER = "checkin_page/vendor/zxing-wasm-3.1.4/zxing_reader.js"
DECODER_WASM = "checkin_page/vendor/zxing-wasm-3.1.4/zxing_reader.wasm"

# The files the page needs to open with no network, cached by its service worker at install.
OFFLINE_ASSETS = (
    "checkin_page/checkin.css",
    "checkin_page/offline_copy.js",
    "checkin_page/signed_codes.js",
    "checkin_page/checkin.js",
    "checkin_page/device.js",
    DECODER,
    DECODER_WASM,
)
# The installed app's icons: (file, size, purpose).
ICONS = (
    ("checkin_page/icons/icon-192.png", 192, "any"),
    ("checkin_page/icons/icon-512.png", 512, "any"),
    ("checkin_page/icons/maskable-512.png", 512, "maskable"),
)
THEME_COLOR = "#1f2a44"  # the page's bar (checkin.css)


def _secured(response):
    response["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response["Permissions-Policy"] = "camera=(self), microphone=(), geolocation=()"
    response["Referrer-Policy"] = "same-origin"
    return response


def _labels() -> dict[str, str]:
    """The script's words, translated here: the page has no JavaScript catalog."""
    return {
        "admitted": _("Admitted"),
        "already_used": _("Already used"),
        "used_at": _("Checked in at %(time)s"),
        "by_this_device": _("by this device"),
        "by": _("by %(who)s"),
        "by_another": _("at another gate or by another person"),
        "revoked": _("Revoked"),
        "not_paid": _("Not paid"),
        "not_found": _("Not found"),
        "not_found_detail": _("No ticket %(code)s in this event."),
        "not_checked_in": _("Not checked in"),
        "not_allowed": _("Not allowed"),
        "refused": _("Refused"),
        "offline": _("No connection"),
        "offline_detail": _("The scan was not sent. Check the network and scan again."),
        "offline_mark": _("offline"),
        "not_decided": _("This scan could not be decided on this device: scan it again."),
        "no_copy": _("No copy of this event on this device yet: connect once to load it."),
        "up_to_date": _("Up to date (%(time)s)"),
        "copying": _("Copying the event to this device: %(count)s tickets…"),
        "copy_ready": _("%(count)s tickets on this device"),
        "offline_since": _("Offline since %(time)s"),
        "waiting": _("%(count)s scans waiting"),
        "uploading": _("Uploading %(count)s scans…"),
        "conflicts": _("Refused by the server after the fact"),
        "session_later": _("Sign in again to upload the waiting scans."),
        "wait": _("Too many scans"),
        "undone": _("Check-in undone"),
        "undone_detail": _("%(name)s can be scanned again."),
        "undo": _("Undo last admission"),
        "checked_in": _("Checked in %(done)s of %(total)s"),
        "camera_off": _("Camera off"),
        "camera_start": _("Start camera"),
        "camera_stop": _("Stop camera"),
        "camera_on": _("Camera on: hold the QR code in the frame"),
        "camera_failed": _("No camera: type or scan the code into the field."),
        "pick_event": _("Pick the event first."),
        "pick_type": _("Pick the check-in type first."),
        "name_gate": _("Name this gate first."),
        "session_over": _("Your session has ended: sign in again."),
        "signing_out": _("Signing out: uploading the waiting scans…"),
        "signed_out": _("Signed out on this device: sign in to scan."),
    }


@never_cache
@login_required
@require_GET
def check_in_page(request):
    organizer_ids = user_organizer_ids(user_id=request.user.pk)
    if not organizer_ids:
        response = render(request, "checkin_page/refused.html", status=403)
        return _secured(response)
    events = [
        {
            "id": event.pk,
            "organizer_id": event.organizer_id,
            "organizer": event.organizer.name,
            "title": event.title,
            "starts": human_date(event.start_at, "short"),
            "check_in_types": [{"id": t.pk, "name": t.name} for t in event.check_in_types.all()],
        }
        for event in events_for_check_in(organizer_ids=organizer_ids)
    ]
    config = {
        # Whose copy and queue this page works with (§15: a device changes hands), and which
        # sign-in: a new one after each sign-out, so the page knows a sign-out that never
        # reached the server (sent offline) from a member who signed in again.
        "user_id": request.user.pk,
        "session": _page_session(request),
        "api": "/api/public",
        "token_url": reverse("checkin_page:token"),
        "last_check_in_url": reverse("checkin_page:last_check_in"),
        # Loaded only where the browser cannot read QR codes itself (BarcodeDetector); the
        # .wasm from here too, not the library's default CDN.
        "decoder_url": static(DECODER),
        "decoder_wasm_url": static(DECODER_WASM),
        "worker_url": reverse("checkin_page:worker"),
        "worker_scope": reverse("checkin_page:page"),
        "sync_limit": 1000,
        # A scan waits this long for the API before the page decides it from its copy.
        "online_timeout_ms": 2500,
        "time_zone": settings.TIME_ZONE,
        # The script writes times in the page's language and calendar, as the labels above.
        "locale": intl_locale(),
        "events": events,
        "labels": _labels(),
    }
    return _secured(render(request, "checkin_page/page.html", {"config": config}))


def _page_session(request) -> str:
    # Kept in the session: signing out flushes it and signing in starts without it.
    return request.session.setdefault("checkin_page_session", secrets.token_urlsafe(16))


@never_cache
@login_required
@require_POST
def page_token(request):
    """A fresh API token for the page's script (CSRF-checked: it is a same-site POST).

    At most CHECK_IN_TOKEN_RATE_LIMIT per user: each is a row, and the page needs one about
    every twelve minutes (renewed at four fifths of its life), or after a 401.
    """
    usage = get_usage(
        request,
        group="check-in-page-token",
        key="user",
        rate=settings.CHECK_IN_TOKEN_RATE_LIMIT,
        increment=True,
    )
    if usage is not None and usage["should_limit"]:
        refused = RateLimited(usage["time_left"])
        return JsonResponse(
            error_body(refused.code, refused.message),
            status=refused.status_code,
            headers=refused.headers,
        )
    if not user_organizer_ids(user_id=request.user.pk):
        return JsonResponse(
            {"success": False, "error": "not_organizer_member", "message": _("Not a member.")},
            status=403,
        )
    token = page_token_issue(user=request.user)
    return JsonResponse(
        {"access_token": token.access_token, "token_type": "Bearer", "expires_in": token.expires_in}
    )


def _positive_int(value: str | None) -> int | None:
    if not (value and value.isascii() and value.isdigit()):
        return None  # also "²", which isdigit() accepts and int() refuses
    return int(value) if 0 < int(value) <= 2**31 - 1 else None


@never_cache
@login_required
@require_GET
def last_check_in_view(request):
    """Who admitted an already-used ticket, and when: `{at, by}`; 404 for a ticket the user's
    organizers do not hold, or a malformed query."""
    event_id = _positive_int(request.GET.get("event_id"))
    ticket_id = _positive_int(request.GET.get("ticket_id"))
    found = (
        last_check_in(
            user_id=request.user.pk,
            event_id=event_id,
            ticket_id=ticket_id,
            check_in_type_id=_positive_int(request.GET.get("check_in_type_id")),
        )
        if event_id and ticket_id
        else None
    )
    if found is None:
        return JsonResponse({"success": False, "error": "not_found"}, status=404)
    at = timezone.localtime(found["at"]).isoformat(timespec="seconds")
    return JsonResponse({"success": True, "at": at, "by": found["by"]})


@never_cache
@require_GET
def service_worker(request):
    """The page's service worker, from under /checkin/ so its scope covers the page.

    No sign-in needed (the browser fetches it to update it, and it holds no data); its version
    is a digest of the assets it caches, so a deploy that changes them installs a new worker
    and a new cache.
    """
    digest = hashlib.sha256()
    for name in OFFLINE_ASSETS:
        with open(finders.find(name), "rb") as handle:
            digest.update(handle.read())
    body = render_to_string(
        "checkin_page/worker.js",
        {
            "version": digest.hexdigest()[:16],
            "page_url": json.dumps(reverse("checkin_page:page")),
            "signed_out": json.dumps(_("No connection, and nobody is signed in on this device.")),
            "assets": json.dumps([static(name) for name in OFFLINE_ASSETS]),
        },
    )
    response = HttpResponse(body, content_type="text/javascript; charset=utf-8")
    response["Content-Security-Policy"] = "default-src 'none'; connect-src 'self'"
    response["Service-Worker-Allowed"] = reverse("checkin_page:page")
    return response


@require_GET
def web_app_manifest(request):
    """The web app manifest that lets staff add the page to a phone's home screen and open it
    as an app of its own (CONTRACT §15). No sign-in needed: the browser fetches it to install
    the app, and it holds nothing of anyone's. Named in the browser's language."""
    page = reverse("checkin_page:page")
    manifest = {
        "name": _("Ticket check-in"),
        "short_name": _("Check-in"),
        "start_url": page,
        "scope": page,
        "display": "standalone",
        "orientation": "portrait",
        "background_color": THEME_COLOR,
        "theme_color": THEME_COLOR,
        "icons": [
            {"src": static(name), "sizes": f"{n}x{n}", "type": "image/png", "purpose": purpose}
            for name, n, purpose in ICONS
        ],
    }
    response = JsonResponse(manifest, content_type="application/manifest+json")
    response["Cache-Control"] = "no-cache"
    return response
