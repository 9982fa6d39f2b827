"""List parameters shared by every list endpoint, on django-filter (CONTRACT §6).

- `order_by` / `order`: one of the endpoint's fields, `asc|desc`; ties break on `id` in the same
  direction; `null`s last ascending and first descending.
- `q`: a JSON object is a set of exact-match filters on the endpoint's listed keys (unknown keys
  are a 400); any other text is a case-insensitive contains-search over the endpoint's fields.
- Comma lists (`status=active,used`), int32 ids and ISO 8601 times that reject what they cannot
  read.

Every invalid value fails the filter form, which `DjangoFilterBackend` turns into a DRF
`ValidationError`: a 400 `invalid_parameters` whose `fields` names the parameter. Each filter also
carries the OpenAPI schema of its parameter, so the document says exactly what is accepted.
"""

from collections.abc import Callable, Iterable
from datetime import timedelta

from django import forms
from django.db import connections
from django.db.models import (
    AutoField,
    DateTimeField,
    Expression,
    F,
    IntegerField,
    Q,
    QuerySet,
    Value,
)
from django.db.models.functions import Concat
from django_filters import rest_framework as filters
from drf_spectacular.extensions import OpenApiFilterExtension
from drf_spectacular.plumbing import build_parameter_type
from drf_spectacular.utils import OpenApiParameter

from .fields import INT32_MAX
from .filter_fields import (
    MAX_SEARCH_LENGTH,
    ApiDateTimeField,
    CommaChoiceField,
    JoinedText,
    QueryField,
    SearchText,
)
from .schema_rules import query_filter_schema

DEFAULT_ORDER_BY = "id"
ORDER_CHOICES = ("asc", "desc")


class ApiFilter(filters.Filter):
    """A filter that documents its own parameter: `schema` (OpenAPI) and `description`."""

    param_schema: dict = {"type": "string"}
    param_style: str | None = None
    param_explode: bool | None = None

    def __init__(self, *args, description: str = "", schema: dict | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.description = description
        if schema is not None:
            self.param_schema = schema

    def searches_text(self, value) -> bool:
        """Whether `value` makes this filter a contains-search that an index can answer (see
        `order_queryset`)."""
        return False


class Int32Filter(ApiFilter):
    field_class = forms.IntegerField

    def __init__(self, *args, min_value: int = 1, **kwargs):
        kwargs.setdefault(
            "schema",
            {"type": "integer", "format": "int32", "minimum": min_value, "maximum": INT32_MAX},
        )
        super().__init__(*args, min_value=min_value, max_value=INT32_MAX, **kwargs)


class TextFilter(ApiFilter):
    """A text filter. `within`: a `JoinedText` that holds the field, for a contains-search that
    its trigram index answers: the joined text contains whatever the field contains, so that
    index finds the candidates and the field's own condition rechecks them (no index of the
    column alone is then needed, which every write of the row would pay for)."""

    field_class = forms.CharField

    def __init__(
        self,
        *args,
        max_length: int = MAX_SEARCH_LENGTH,
        within: JoinedText | None = None,
        **kwargs,
    ):
        kwargs.setdefault("schema", {"type": "string", "maxLength": max_length})
        super().__init__(*args, max_length=max_length, **kwargs)
        self.within = within

    def filter(self, qs, value):
        if self.within is None or not self.searches_text(value):
            return super().filter(qs, value)
        return super().filter(
            qs.alias(_searched_text=self.within).filter(_searched_text__icontains=value), value
        )

    def searches_text(self, value) -> bool:
        return self.lookup_expr in ("contains", "icontains") and _indexable_search(value)


class DateTimeFilter(ApiFilter):
    field_class = ApiDateTimeField
    param_schema = {"type": "string", "format": "date-time"}


class CommaChoiceFilter(ApiFilter):
    """`status=active,used`; `to_q` maps the chosen values to a condition (default `__in`)."""

    field_class = CommaChoiceField
    param_style = "form"
    param_explode = False

    def __init__(
        self,
        *args,
        choices: Iterable[str],
        to_q: Callable[[list[str]], Q] | None = None,
        **kwargs,
    ):
        choices = tuple(choices)
        kwargs.setdefault("schema", {"type": "array", "items": {"type": "string", "enum": choices}})
        super().__init__(*args, choices=choices, **kwargs)
        self.to_q = to_q

    def filter(self, qs, value):
        if not value:
            return qs
        if self.to_q is not None:
            return qs.filter(self.to_q(value))
        return qs.filter(**{f"{self.field_name}__in": value})


class QueryFilter(ApiFilter):
    """`q`: exact filters from a JSON object, or a contains-search over `search_fields`.

    `exact_fields` maps each allowed JSON key to the form field that validates its value;
    `exact_q` may map a key to a function building its condition (default: `key=value`).
    """

    field_class = QueryField

    def __init__(
        self,
        *,
        search_fields: Iterable[str],
        exact_fields: dict[str, forms.Field],
        exact_q: dict[str, Callable[[object], Q]] | None = None,
        joined_search: bool = False,
        **kwargs,
    ):
        self.search_fields = tuple(search_fields)
        # Search the fields as one `JoinedText` (an index of it exists: see the model's
        # migrations) rather than one condition per field.
        self.joined_search = joined_search
        self.exact_q = exact_q or {}
        keys = ", ".join(exact_fields)
        kwargs.setdefault(
            "description",
            "Search text (case-insensitive, contained in any of: "
            f"{', '.join(self.search_fields)}), or a JSON object of exact filters with keys "
            f'{keys}, e.g. {{"{next(iter(exact_fields))}": ...}}.',
        )
        kwargs.setdefault("schema", query_filter_schema(exact_fields, MAX_SEARCH_LENGTH))
        super().__init__(field_name="q", exact_fields=exact_fields, **kwargs)

    def searches_text(self, value) -> bool:
        return isinstance(value, SearchText) and _indexable_search(value)

    def filter(self, qs, value):
        if value is None or value == "":
            return qs
        if isinstance(value, SearchText):
            if self.joined_search:
                joined = JoinedText(*self.search_fields)
                return qs.alias(_searched_text=joined).filter(_searched_text__icontains=value)
            condition = Q()
            for name in self.search_fields:
                condition |= Q(**{f"{name}__icontains": value})
            return qs.filter(condition)
        for key, item in value.items():
            build = self.exact_q.get(key)
            qs = qs.filter(build(item) if build else Q(**{key: item}))
        return qs


class _ParameterOnly(ApiFilter):
    """Read by `ApiFilterSet.filter_queryset` once every filter has run."""

    field_class = forms.ChoiceField

    def filter(self, qs, value):
        return qs


class OrderByFilter(_ParameterOnly):
    def __init__(self, *, fields: Iterable[str], **kwargs):
        self.fields = tuple(fields)
        kwargs.setdefault(
            "schema", {"type": "string", "enum": list(self.fields), "default": DEFAULT_ORDER_BY}
        )
        kwargs.setdefault("description", "Sort key; ties break on id in the same direction.")
        super().__init__(choices=[(f, f) for f in self.fields], **kwargs)


class OrderFilter(_ParameterOnly):
    def __init__(self, **kwargs):
        kwargs.setdefault(
            "schema", {"type": "string", "enum": list(ORDER_CHOICES), "default": "asc"}
        )
        kwargs.setdefault(
            "description", "Sort direction. Empty values sort last ascending, first descending."
        )
        super().__init__(choices=[(o, o) for o in ORDER_CHOICES], **kwargs)


def order_queryset(
    queryset: QuerySet, *, order_by: str, descending: bool, after_search: bool = False
) -> QuerySet:
    """Deterministic order: the key, then `id` the same way; nulls last asc, first desc.

    `after_search`: the rows come from a contains-search, which PostgreSQL answers from trigram
    indexes. Sorted by a plain column, a page (`LIMIT`) tempts the planner to walk that
    column's index in order hoping to meet matches early, which reads the whole table when
    they are rare (130 ms at 200,000 tickets instead of 6). The key is then an expression no
    index provides (`id + 0`): the matches are found first, then sorted, as the count does.
    """
    field = queryset.model._meta.get_field(order_by)
    nullable = field.null
    key = F(order_by)
    if after_search and connections[queryset.db].vendor == "postgresql":
        key = _unindexed(key, field)
    if descending:
        ordering = [key.desc(nulls_first=True) if nullable else key.desc()]
    else:
        ordering = [key.asc(nulls_last=True) if nullable else key.asc()]
    if order_by != "id":
        ordering.append(F("id").desc() if descending else F("id").asc())
    return queryset.order_by(*ordering)


def _indexable_search(value) -> bool:
    """A trigram index finds the rows containing 3 characters or more; shorter text matches so
    many that the key's index, walked in order, meets a page of them at once."""
    return isinstance(value, str) and len(value) >= 3


def _unindexed(key: F, field) -> Expression:
    """The same order as `key`, from an expression that no index of the column serves."""
    if isinstance(field, DateTimeField):
        return key + Value(timedelta(0))
    if isinstance(field, IntegerField | AutoField):
        return key + 0
    return Concat(key, Value(""), output_field=field)


class ApiFilterSet(filters.FilterSet):
    """Runs the filters, then orders by `order_by`/`order` (declared on every list filter)."""

    def is_valid(self) -> bool:
        # django-filter skips a parameter sent empty; the contract makes any value outside the
        # allowed ones a 400, and an empty `order=` is more likely a client bug than a wish.
        valid = super().is_valid()
        blank = [name for name in self.filters if self.data.get(name, None) == ""]
        for name in blank:
            self.form.add_error(name, "Must not be empty: leave the parameter out instead.")
        return valid and not blank

    @property
    def searches_text(self) -> bool:
        """Whether a valid filter's value makes the list a contains-search (see
        `order_queryset`, and `PagePagination`, which has it planned for its pattern)."""
        data = self.form.cleaned_data
        return any(
            isinstance(f, ApiFilter) and f.searches_text(data.get(name))
            for name, f in self.filters.items()
        )

    def filter_queryset(self, queryset):
        queryset = super().filter_queryset(queryset)
        data = self.form.cleaned_data
        return order_queryset(
            queryset,
            order_by=data.get("order_by") or DEFAULT_ORDER_BY,
            descending=data.get("order") == "desc",
            after_search=self.searches_text,
        )


def filters_asked(request, view) -> bool:
    """Whether the request sends a parameter of the view's filterset (`filterset_class`)."""
    return not request.query_params.keys().isdisjoint(view.filterset_class.base_filters)


class PlainListMixin:
    """A list view that, asked with no parameter of its filterset (a client's plainest and
    commonest call), reads its page and count with plain statements (`plain_list()`: a page
    function of `(offset, per_page)` and a count function) instead of building the queryset,
    whose ORM compilation costs more than the round trips. Each statement is held to the
    ORM's query by a test."""

    def plain_list(self) -> tuple[Callable[[int, int], list], Callable[[], int]]:
        raise NotImplementedError

    def list(self, request, *args, **kwargs):
        if filters_asked(request, self):
            return super().list(request, *args, **kwargs)
        page, count = self.plain_list()
        items = self.paginator.paginate_reads(request, self, page=page, count=count)
        return self.get_paginated_response(self.get_serializer(items, many=True).data)


class ApiFilterBackend(filters.DjangoFilterBackend):
    """django-filter's backend; invalid parameters raise a DRF `ValidationError` (400).

    The view keeps its filterset (`view.filterset`) for the paginator to read."""

    raise_exception = True

    def filter_queryset(self, request, queryset, view):
        filterset_class = self.get_filterset_class(view, queryset)
        if filterset_class is not None and not filters_asked(request, view):
            # No parameter of the filterset: the default order, without building the filters
            # and their form (a sixth of a trivial list's time). No filterset tells the view so.
            view.filterset = None
            return order_queryset(queryset, order_by=DEFAULT_ORDER_BY, descending=False)
        return super().filter_queryset(request, queryset, view)

    def get_filterset(self, request, queryset, view):
        view.filterset = super().get_filterset(request, queryset, view)
        return view.filterset


class ApiFilterBackendExtension(OpenApiFilterExtension):
    """Documents each parameter with the schema its filter declares (types, enums, defaults)."""

    target_class = ApiFilterBackend
    priority = 1

    def get_schema_operation_parameters(self, auto_schema, *args, **kwargs):
        filterset_class = getattr(auto_schema.view, "filterset_class", None)
        if filterset_class is None:
            return []
        parameters = []
        for name, filter_field in filterset_class.base_filters.items():
            if not isinstance(filter_field, ApiFilter):
                raise TypeError(f"{filterset_class.__name__}.{name} must be an ApiFilter.")
            parameters.append(
                build_parameter_type(
                    name=name,
                    schema=dict(filter_field.param_schema),
                    location=OpenApiParameter.QUERY,
                    required=False,
                    description=filter_field.description or None,
                    style=filter_field.param_style,
                    explode=filter_field.param_explode,
                )
            )
        return parameters
