"""One pagination for every list: `page`/`per_page` in, `count/total/page/per_page` out."""

from collections.abc import Callable
from contextlib import nullcontext

from rest_framework.pagination import BasePagination
from rest_framework.response import Response

from ticketing.db import planned_for_their_values

from .exceptions import InvalidParameters
from .fields import INT32_MAX

DEFAULT_PER_PAGE = 10
MAX_PER_PAGE = 100


def _positive_int(request, name: str, default: int, maximum: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default  # sent empty is a 400, as every list parameter (CONTRACT §6)
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise InvalidParameters(
            f"Parameter '{name}' must be a whole number.",
            fields={name: ["Must be a whole number."]},
        ) from None
    if not 1 <= value <= maximum:
        raise InvalidParameters(
            f"Parameter '{name}' must be between 1 and {maximum}.",
            fields={name: [f"Must be between 1 and {maximum}."]},
        )
    return value


class PagePagination(BasePagination):
    """Reads one page with one query and counts with another, whatever the page size; the
    last page (shorter than `per_page`, and not past the end) needs no count.

    The count reads the list's index only (an event's tickets: `(event_id, ...)`, no table
    rows). A page after the first finds its keys the same way, skipping `offset` index entries,
    and only then reads its rows by primary key: skipping table rows (and their joins) cost
    eight times as much 10,000 tickets deep.

    A contains-search (`q=`) is planned for its pattern, not from a prepared statement's
    generic plan (`planned_for_their_values`).

    The items key is the view's `items_key` ("tickets", "events", ...). A page past the end is
    an empty list, not an error (CONTRACT §6).
    """

    def paginate_queryset(self, queryset, request, view=None):
        def page(offset: int, per_page: int) -> list:
            if offset == 0:
                return list(queryset[:per_page])
            return list(queryset.filter(pk__in=queryset.values("pk")[offset : offset + per_page]))

        filterset = getattr(view, "filterset", None)
        searching = filterset is not None and filterset.is_valid() and filterset.searches_text
        with planned_for_their_values(queryset.db) if searching else nullcontext():
            return self.paginate_reads(request, view, page=page, count=queryset.count)

    def paginate_reads(
        self, request, view, *, page: Callable[[int, int], list], count: Callable[[], int]
    ) -> list:
        """`paginate_queryset` for a list read otherwise: `page(offset, per_page)` returns the
        page's items, `count()` how many there are."""
        self.page_number = _positive_int(request, "page", 1, INT32_MAX)
        self.per_page = _positive_int(request, "per_page", DEFAULT_PER_PAGE, MAX_PER_PAGE)
        self.items_key = getattr(view, "items_key", "results")
        offset = (self.page_number - 1) * self.per_page
        items = page(offset, self.per_page)
        if len(items) < self.per_page and (items or offset == 0):
            self.total = offset + len(items)  # the last page: no count needed
        else:
            self.total = count()
        self.count = len(items)
        return items

    def get_paginated_response(self, data):
        return Response(
            {
                "success": True,
                self.items_key: data,
                "count": self.count,
                "total": self.total,
                "page": self.page_number,
                "per_page": self.per_page,
            }
        )

    def get_paginated_response_schema(self, schema):
        # The schema generator sets `items_key` from the view (it builds this without one).
        items_key = getattr(self, "items_key", "results")
        return {
            "type": "object",
            "required": ["success", items_key, "count", "total", "page", "per_page"],
            "properties": {
                "success": {"type": "boolean", "enum": [True]},
                items_key: schema,
                "count": {
                    "type": "integer",
                    "format": "int32",
                    "description": "Items in this page.",
                },
                "total": {
                    "type": "integer",
                    "format": "int32",
                    "description": "Items matching the query, over all pages.",
                },
                "page": {"type": "integer", "format": "int32"},
                "per_page": {"type": "integer", "format": "int32"},
            },
        }

    def get_schema_operation_parameters(self, view):
        return [
            {
                "name": "page",
                "in": "query",
                "required": False,
                "schema": {"type": "integer", "format": "int32", "minimum": 1, "default": 1},
                "description": "Page number, from 1. A page past the end is empty.",
            },
            {
                "name": "per_page",
                "in": "query",
                "required": False,
                "schema": {
                    "type": "integer",
                    "format": "int32",
                    "minimum": 1,
                    "maximum": MAX_PER_PAGE,
                    "default": DEFAULT_PER_PAGE,
                },
                "description": "Items per page.",
            },
        ]
