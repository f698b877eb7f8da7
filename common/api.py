"""What every app's API shares: who may do what, bounded pages, errors as 400/404, and the
error responses written into the OpenAPI schema.

Who may call which route is the table in :mod:`common.roles` (its ``RolePermission`` is
the default permission class): organisers (staff) everything, assessors the judging tasks
that list them and their own labels. Services raise ``ValueError`` with a sentence a user
can act on; :func:`service_call` turns it into a 400 naming the field when the message
names one.
"""
from __future__ import annotations

from typing import Callable, TypeVar

from django.db import DataError
from django.http import Http404
from rest_framework import pagination, serializers
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.parsers import JSONParser, MultiPartParser

T = TypeVar("T")

MAX_PAGE_SIZE = 500


class Pages(pagination.PageNumberPagination):
    """``?page=N&page_size=M`` (M at most :data:`MAX_PAGE_SIZE`)."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE

    def get_page_size(self, request):
        # A page size that is not a positive integer is an error, not silently the default.
        raw = request.query_params.get(self.page_size_query_param)
        if raw is not None:
            try:
                size = int(raw)
            except ValueError:
                raise ValidationError({"page_size": f"must be a whole number, not {raw!r}"}) from None
            if not 1 <= size <= self.max_page_size:
                raise ValidationError({"page_size": f"must be between 1 and {self.max_page_size}"})
        return super().get_page_size(request)

    def get_schema_operation_parameters(self, view):
        params = super().get_schema_operation_parameters(view)
        for p in params:
            if p["name"] == self.page_size_query_param:
                p["schema"] = {"type": "integer", "minimum": 1, "maximum": self.max_page_size}
            elif p["name"] == self.page_query_param:
                p["schema"] = {"type": "integer", "minimum": 1}
        return params


class KeysetPages(Pages):
    """``?after=<key>&page_size=M``: the page after a key, in the view's order, without
    counting or skipping rows, so the last page of a million rows costs what the first
    does. The response has ``next`` (the address of the following page, or null) and
    ``results``; there is no ``count`` and no ``page``.

    The view names its keyset: ``keyset_filter(queryset, after) -> queryset`` keeps the
    rows after ``after`` in its order, ``keyset_after(obj) -> str`` is the key of a row.
    """

    after_query_param = "after"

    def paginate_queryset(self, queryset, request, view=None):
        if self.page_query_param in request.query_params:
            raise ValidationError({self.page_query_param: [
                "pages are read in order: follow `next` (or give ?after=<the last id seen>)"]})
        size = self.get_page_size(request)
        self.request = request
        after = request.query_params.get(self.after_query_param)
        if after:
            queryset = view.keyset_filter(queryset, after)
        rows = list(queryset[: size + 1])
        self.next_after = view.keyset_after(rows[size - 1]) if len(rows) > size else None
        return rows[:size]

    def get_paginated_response(self, data):
        from rest_framework.response import Response
        from rest_framework.utils.urls import replace_query_param

        next_url = None
        if self.next_after is not None:
            next_url = replace_query_param(self.request.build_absolute_uri(),
                                           self.after_query_param, self.next_after)
        return Response({"next": next_url, "results": data})

    def get_paginated_response_schema(self, schema):
        return {"type": "object", "required": ["results"], "properties": {
            "next": {"type": "string", "nullable": True, "format": "uri"},
            "results": schema}}

    def get_schema_operation_parameters(self, view):
        return [
            {"name": self.after_query_param, "required": False, "in": "query",
             "description": "the key of the last row of the previous page (its `next` link)",
             "schema": {"type": "string"}},
            {"name": self.page_size_query_param, "required": False, "in": "query",
             "description": "rows per page",
             "schema": {"type": "integer", "minimum": 1, "maximum": self.max_page_size}},
        ]


def lookup(getter: Callable[[str], T], value: str, what: str) -> T:
    """``getter(value)`` (a selector raising ValueError for an unknown id), else a 404."""
    try:
        return getter(value)
    except ValueError as exc:
        raise Http404(str(exc) or f"no {what} {value!r}") from None


def service_call(fn: Callable[..., T], *args, field: str | None = None, **kwargs) -> T:
    """One service call; its ``ValueError`` becomes a 400 (under ``field`` when given)."""
    try:
        return fn(*args, **kwargs)
    except ValueError as exc:
        raise ValidationError({field or "detail": [str(exc)]}) from None


def name_field(getter: Callable[[str], object], what: str):
    """A validator for a field naming an object by its natural key (a 400 naming the field
    and the known names when there is none)."""

    def check(value):
        try:
            return getter(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc) or f"no {what} {value!r}") from None

    return check


ERROR_SCHEMA = {
    "type": "object",
    "description": "What went wrong: `detail`, or a list of messages per field name.",
    "additionalProperties": True,
}
ERROR_STATUSES = {
    "400": "The request is invalid; the body names the field.",
    "401": "No valid token or session.",
    "403": "The account may not do this (writes need staff).",
    "404": "No such object.",
}


def error_responses_hook(result, generator, request, public):
    """drf-spectacular post-processing: every operation documents its error responses
    (400 where it takes input, 401, 403, 404) with one Error schema."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            responses = operation.setdefault("responses", {})
            # errors come in the media types the operation answers in (JSON, or text)
            media = {m for r in responses.values() for m in r.get("content", {})} or {"application/json"}
            for status, text in ERROR_STATUSES.items():
                content = {m: {"schema": {"$ref": "#/components/schemas/Error"} if m == "application/json"
                               else {"type": "string"}} for m in sorted(media)}
                responses.setdefault(status, {"content": content, "description": text})
    return result


def api_token_issue(username: str, *, rotate: bool = False) -> str:
    """The API token of an existing account (created if it has none; replaced with
    ``rotate``, which makes the old one stop working)."""
    from django.contrib.auth import get_user_model
    from django.db import transaction
    from rest_framework.authtoken.models import Token

    User = get_user_model()
    try:
        user = User.objects.get(**{User.USERNAME_FIELD: username})
    except User.DoesNotExist:
        raise ValueError(f"no account named {username!r}; create it first (createsuperuser, "
                         "or the admin)") from None
    if not user.is_active:
        raise ValueError(f"account {username!r} is inactive")
    with transaction.atomic():
        if rotate:
            Token.objects.filter(user=user).delete()
        token, _ = Token.objects.get_or_create(user=user)
    return token.key


def _unstorable(text: str) -> str | None:
    """Why ``text`` cannot be stored (PostgreSQL refuses NUL; UTF-8 has no lone
    surrogates), or None."""
    if "\x00" in text:
        return "contains a NUL character"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains an unpaired surrogate character"
    return None


MAX_JSON_DEPTH = 32  # arrays and objects inside one another; no API body needs more


def _check_text(value, where: str) -> None:
    """Every string (keys too) can be stored, and the nesting is at most
    :data:`MAX_JSON_DEPTH` deep; else a 400 naming the place. Iterative, so a deep body
    cannot exhaust the stack here."""
    stack = [(value, where, 0)]
    while stack:
        value, where, depth = stack.pop()
        if isinstance(value, str):
            reason = _unstorable(value)
            if reason:
                raise ParseError(f"{where or 'body'}: text {reason}")
        elif isinstance(value, (dict, list)):
            if depth >= MAX_JSON_DEPTH:
                raise ParseError(f"{where or 'body'}: nested more than {MAX_JSON_DEPTH} deep")
            if isinstance(value, dict):
                for key, item in value.items():
                    _check_text(key, f"{where}.{key}" if where else "a field name")
                    stack.append((item, f"{where}.{key}" if where else str(key), depth + 1))
            else:
                stack.extend((item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value))


class StrictJSONParser(JSONParser):
    """JSON bodies whose every string can be stored and whose nesting is bounded: a NUL, an
    unpaired surrogate or a body nested deeper than :data:`MAX_JSON_DEPTH` is a 400 naming
    the place, not a database or server error."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:  # the decoder itself gave up: far deeper than any limit
            raise ParseError(f"JSON parse error - nested more than {MAX_JSON_DEPTH} deep") from None
        _check_text(data, "")
        return data


class StrictMultiPartParser(MultiPartParser):
    """Multipart bodies (file uploads) whose every text field can be stored, as
    :class:`StrictJSONParser` for JSON; the files themselves are read by the imports."""

    def parse(self, stream, media_type=None, parser_context=None):
        parsed = super().parse(stream, media_type, parser_context)
        for key in parsed.data:
            _check_text(key, "a field name")
            for value in parsed.data.getlist(key):
                _check_text(value, key)
        return parsed


def exception_handler(exc, context):
    """DRF's handler, with values the database refuses (e.g. a NUL in a query parameter
    used in a lookup) answered as a 400 instead of a server error."""
    from rest_framework.views import exception_handler as drf_exception_handler  # not at import:
    # rest_framework.views reads the settings that name this module

    if isinstance(exc, DataError):
        exc = ValidationError({"detail": "a value in the request cannot be stored or looked "
                                         "up (a NUL or another character the database refuses)"})
    return drf_exception_handler(exc, context)
