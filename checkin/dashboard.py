"""An event's dashboard in the admin: what is sold and checked in per ticket type, the check-in
timeline of CONTRACT §12 drawn as an SVG chart here (no script, nothing from another site), and
the check-ins of each gate and person: the scan's note, which the check-in page fills with its
gate's name (scanner apps may too), and the staff member and application that recorded them.

The figures are the live counts' (checkin.stats, three statements) and one more aggregate.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _

from events.models import Event
from ticketing.admin_dates import ADMIN_TIME_STYLE
from ticketing.dates import admin_date, human_date

from .models import CheckInLog
from .stats import Bucket, CheckInStats, event_check_in_stats

# The chart's drawing area, in SVG units; the SVG scales to the page's width.
WIDTH, HEIGHT = 960, 240
LEFT, BOTTOM, TOP = 48, 28, 12


@dataclass(frozen=True)
class GateCount:
    gate: str  # the check-ins' note, spaces trimmed; "" when they had none
    person: str  # the staff member's name; "" for an application acting for nobody
    application: str  # the application's name; "" for a check-in in the admin
    check_ins: int


@dataclass(frozen=True)
class Dashboard:
    event: Event
    stats: CheckInStats
    gates: list[GateCount]
    chart: SafeString


def gate_counts(*, event: Event) -> list[GateCount]:
    """Successful check-ins per gate, person and application, most first (one statement).

    CONTRACT §7 gives a scan no gate but a free-text note, kept in its audit row: the check-in
    page sends its gate's name there (every phone is the same application, "Staff check-in
    page"), and scanner apps use it for gate names too. Renews and refusals count nowhere.
    """
    rows = (
        CheckInLog.objects.filter(
            event=event, action=CheckInLog.Action.CHECK_IN, error__isnull=True
        )
        .values(
            "note",
            "actor_application_id",
            "actor_application__name",
            "actor_user_id",
            "actor_user__full_name",
            "actor_user__username",
        )
        .annotate(n=Count("id"))
        .order_by()
    )
    # Keyed by the actors' ids too: two staff members (or applications) of one name stay apart.
    totals: dict[tuple, int] = {}
    for row in rows:
        person = ""
        if row["actor_user_id"] is not None:
            person = row["actor_user__full_name"] or row["actor_user__username"]
        # Typed on a phone: "North door " is the North door.
        names = (" ".join(row["note"].split()), person, row["actor_application__name"] or "")
        key = (*names, row["actor_user_id"], row["actor_application_id"])
        totals[key] = totals.get(key, 0) + row["n"]
    ordered = sorted(
        totals.items(),
        key=lambda item: (
            -item[1],
            not item[0][0],  # named gates first
            *(name.casefold() for name in item[0][:3]),
            *(actor_id or 0 for actor_id in item[0][3:]),
        ),
    )
    return [
        GateCount(gate=gate, person=person, application=application, check_ins=n)
        for (gate, person, application, *_), n in ordered
    ]


def _n(value: float) -> str:
    """A coordinate as SVG takes it (format_html escapes its arguments before formatting)."""
    return f"{value:.2f}"


def _local(moment: datetime) -> str:
    return admin_date(moment)


def timeline_svg(timeline: list[Bucket]) -> SafeString:
    """Bars of check-ins per quarter hour, the y axis's top value and a few times beneath."""
    if not timeline:
        return format_html('<p class="dashboard-empty">{}</p>', _("No check-ins yet."))
    top = max(bucket.check_ins for bucket in timeline) or 1
    plot_w, plot_h = WIDTH - LEFT, HEIGHT - BOTTOM - TOP
    step = plot_w / len(timeline)
    bars = format_html_join(
        "",
        '<rect x="{}" y="{}" width="{}" height="{}" class="bar"><title>{} – {}: {}</title></rect>',
        (
            (
                _n(LEFT + i * step),
                _n(TOP + plot_h - bucket.check_ins / top * plot_h),
                _n(max(step - 1, 0.5)),
                _n(bucket.check_ins / top * plot_h),
                _local(bucket.start),
                human_date(bucket.end, ADMIN_TIME_STYLE),
                bucket.check_ins,
            )
            for i, bucket in enumerate(timeline)
        ),
    )
    every = max(1, len(timeline) // 6)
    ticks = format_html_join(
        "",
        '<text x="{}" y="{}" class="tick">{}</text>',
        (
            (_n(LEFT + i * step), HEIGHT - 8, _local(bucket.start))
            for i, bucket in enumerate(timeline)
            if i % every == 0
        ),
    )
    return format_html(
        '<svg class="timeline" viewBox="0 0 {} {}" role="img" aria-label="{}">'
        '<line x1="{}" y1="{}" x2="{}" y2="{}" class="axis"/>'
        '<text x="{}" y="{}" class="ymax" text-anchor="end">{}</text>'
        '<text x="{}" y="{}" class="ymax" text-anchor="end">0</text>{}{}</svg>',
        WIDTH,
        HEIGHT,
        _("Check-ins per 15 minutes, at most %(top)d") % {"top": top},
        LEFT,
        TOP + plot_h,
        WIDTH,
        TOP + plot_h,
        LEFT - 6,
        TOP + 10,
        top,
        LEFT - 6,
        TOP + plot_h,
        bars,
        ticks,
    )


def event_dashboard(*, event: Event) -> Dashboard:
    stats = event_check_in_stats(event=event)
    return Dashboard(
        event=event,
        stats=stats,
        gates=gate_counts(event=event),
        chart=timeline_svg(stats.timeline),
    )
