"""API of the uploads app: files for scripts to import, as the organiser pages do.

``POST /api/uploads/<kind>/`` (multipart: the file and the same fields as the page's form;
organisers only) keeps the file and records an :class:`~uploads.models.Upload` through
:func:`uploads.services.upload_create`, whose worker imports it under a lease. The answer
is ``202 Accepted`` with the upload and its address in ``Location``; ``GET`` on that
address shows ``status`` (queued, running, done, failed), ``progress`` (0 to 1), ``note``
(the latest step), ``result`` and ``error`` — which, as on the pages, names the file and
its line, and means nothing was imported. Every kind goes through the worker, whatever its
size, so a script always polls the same way.
"""
from __future__ import annotations

from django.http import Http404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (OpenApiParameter, OpenApiResponse, extend_schema,
                                   extend_schema_field)
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from common.api import StrictMultiPartParser, name_field, service_call
from common.fileio import clean_name
from common.trec import ID_MAPS, QRELS_FORMATS
from judging.selectors import judgment_set_list
from retrieval.collections_io import FORMATS as COLLECTION_FORMATS
from retrieval.selectors import collection_list
from topics.selectors import topic_set_get
from topics.topicfiles import TOPIC_FORMATS
from topics.variantfiles import VARIANT_FORMATS

from . import selectors, services
from .models import Upload


class UploadSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField(help_text="this upload in the API: poll it")
    page = serializers.SerializerMethodField(help_text="the organiser's progress page")
    kind = serializers.ChoiceField(choices=Upload.KIND_CHOICES)
    progress = serializers.FloatField(min_value=0, max_value=1)
    params = serializers.DictField(help_text="the fields the upload was posted with")
    result = serializers.DictField(allow_null=True, help_text="once done: what was imported "
                                   "(`message`, and `topic_set`, `run`, `qrels` or `collection`)")

    class Meta:
        model = Upload
        fields = ["id", "url", "page", "kind", "filename", "size", "params", "status", "progress",
                  "note", "error", "result", "created_by", "created", "finished", "attempts"]

    def _absolute(self, path: str) -> str:
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path

    @extend_schema_field(OpenApiTypes.URI)
    def get_url(self, upload) -> str:
        return self._absolute(reverse("api:upload-detail", args=[upload.pk]))

    @extend_schema_field(OpenApiTypes.URI)
    def get_page(self, upload) -> str:
        return self._absolute(reverse("projects:organiser_upload_status", args=[upload.pk]))


def _encoding(value: str) -> None:
    try:
        "".encode(value)  # a LookupError for unknown codecs and for ones that are not text
    except (LookupError, ValueError):
        raise serializers.ValidationError(f"unknown text encoding {value!r} (e.g. utf-8, "
                                          "latin-1)") from None


def _clean(what: str):
    def check(value):
        try:
            clean_name(value, what)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None
    return check


def _existing_topic_set(**kwargs) -> serializers.CharField:
    return serializers.CharField(max_length=100,
                                 validators=[name_field(topic_set_get, "topic set")], **kwargs)


class _FileUpload(serializers.Serializer):
    file = serializers.FileField(allow_empty_file=False, use_url=False,
                                 help_text="the file (.gz accepted where the page accepts it)")
    encoding = serializers.CharField(max_length=40, default="utf-8", validators=[_encoding],
                                     help_text="text encoding of the file")

    def params(self) -> dict:
        """The upload's params: the validated fields but the file."""
        return {k: v for k, v in self.validated_data.items() if k != "file"}


class TopicsUploadSerializer(_FileUpload):
    topic_set = serializers.CharField(max_length=100, validators=[_clean("topic set name")],
                                      help_text="an existing topic set, or a new one to create")
    format = serializers.ChoiceField(choices=TOPIC_FORMATS)
    ids = serializers.ChoiceField(choices=[("given", "as written in the file"),
                                           ("position", "1, 2, … by position")], default="given")
    replace = serializers.BooleanField(default=False, help_text="overwrite topics already in "
                                       "the set (their variants are kept)")


class VariantsUploadSerializer(_FileUpload):
    topic_set = _existing_topic_set()
    format = serializers.ChoiceField(choices=VARIANT_FORMATS)
    create_topics = serializers.BooleanField(default=False)
    replace = serializers.BooleanField(default=False)


class RunUploadSerializer(_FileUpload):
    file = serializers.FileField(allow_empty_file=False, use_url=False,
                                 help_text="a TREC run: qid Q0 docid rank score tag (.gz accepted)")
    topic_set = _existing_topic_set()
    tag = serializers.CharField(max_length=100, required=False, allow_blank=True, default="",
                                validators=[_clean("run tag")],
                                help_text="defaults to the file's tag")


class QrelsUploadSerializer(_FileUpload):
    format = serializers.ChoiceField(choices=QRELS_FORMATS, help_text="adhoc: topic iter docid "
                                     "rel; diversity: topic subtopic docid rel; smart: query "
                                     "docid … (each pair relevant); cranqrel: query docid code")
    name = serializers.CharField(max_length=100, validators=[_clean("qrels name")])
    topic_set = _existing_topic_set(required=False, allow_blank=True, default="",
                                    help_text="check every topic id is in this set")
    id_map = serializers.ChoiceField(choices=list(ID_MAPS), required=False, allow_blank=True,
                                     default="")

    def validate_name(self, value):
        if judgment_set_list().filter(name=value).exists():
            raise serializers.ValidationError(f"qrels named {value!r} already exist (a "
                                              "judgment set has that name); choose another "
                                              "name")
        return value


class CollectionUploadSerializer(_FileUpload):
    file = serializers.FileField(allow_empty_file=False, use_url=False,
                                 help_text="jsonl ({id, contents} a line), TREC <DOC> or SMART "
                                           "(.I/.W); .gz accepted")
    name = serializers.CharField(max_length=100, validators=[_clean("collection name")])
    format = serializers.ChoiceField(choices=COLLECTION_FORMATS)
    skip_empty = serializers.BooleanField(default=False, help_text="leave out documents with "
                                          "nothing to index (else an error)")

    def validate_name(self, value):
        if collection_list().filter(name=value).exists():
            raise serializers.ValidationError(f"a collection named {value!r} already exists; "
                                              "choose another name")
        return value


_ACCEPTED = OpenApiResponse(UploadSerializer, description="recorded and queued; poll `url` "
                            "(also in the Location header) until `status` is done or failed")


def _upload_schema(serializer_class, what: str):
    return extend_schema(request={"multipart/form-data": serializer_class},
                         responses={202: _ACCEPTED}, summary=f"upload {what} to import")


class UploadViewSet(viewsets.ReadOnlyModelViewSet):
    """Files posted for import, newest first (organisers only). Each kind has its own
    address to post to; an upload is imported all or nothing by a worker."""

    serializer_class = UploadSerializer
    parser_classes = [StrictMultiPartParser]
    lookup_value_regex = "[^/]+"

    def get_queryset(self):
        qs = selectors.upload_list()
        params = self.request.query_params
        if params.get("status"):
            qs = qs.filter(status=params["status"])
        if params.get("kind"):
            qs = qs.filter(kind=params["kind"])
        return qs

    @extend_schema(parameters=[
        OpenApiParameter("status", str, enum=["queued", "running", "done", "failed"],
                         description="only uploads in this state"),
        OpenApiParameter("kind", str, enum=[k for k, _ in Upload.KIND_CHOICES],
                         description="only uploads of this kind"),
    ])
    def list(self, request, *args, **kwargs):
        for name, allowed in (("status", ("queued", "running", "done", "failed")),
                              ("kind", tuple(dict(Upload.KIND_CHOICES)))):
            value = request.query_params.get(name)
            if value and value not in allowed:
                raise ValidationError({name: f"must be one of {', '.join(allowed)}, not {value!r}"})
        return super().list(request, *args, **kwargs)

    def get_object(self):
        pk = self.kwargs["pk"]
        if not pk.isdigit():
            raise Http404(f"no upload {pk!r}")
        try:
            row = selectors.upload_get(int(pk))
        except ValueError as exc:
            raise Http404(str(exc)) from None
        self.check_object_permissions(self.request, row)
        return row

    def _create(self, request, kind: str, serializer_class) -> Response:
        serializer = serializer_class(data=request.data)
        serializer.is_valid(raise_exception=True)
        row = service_call(services.upload_create, kind, serializer.validated_data["file"],
                           serializer.params(), created_by=request.user.get_username())
        body = UploadSerializer(row, context={"request": request}).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})

    @_upload_schema(TopicsUploadSerializer, "topics")
    @action(detail=False, methods=["post"], url_path="topics")
    def topics(self, request):
        """Topics in one of the topic formats, into an existing or a new topic set.
        Recorded and queued; poll the answer's `url`."""
        return self._create(request, "topics", TopicsUploadSerializer)

    @_upload_schema(VariantsUploadSerializer, "query variants")
    @action(detail=False, methods=["post"], url_path="variants")
    def variants(self, request):
        """Query variants of an existing topic set.
        Recorded and queued; poll the answer's `url`."""
        return self._create(request, "variants", VariantsUploadSerializer)

    @_upload_schema(RunUploadSerializer, "a system run")
    @action(detail=False, methods=["post"], url_path="runs")
    def runs(self, request):
        """A system run (TREC format) of an existing topic set.
        Recorded and queued; poll the answer's `url`."""
        return self._create(request, "run", RunUploadSerializer)

    @_upload_schema(QrelsUploadSerializer, "qrels")
    @action(detail=False, methods=["post"], url_path="qrels")
    def qrels(self, request):
        """Qrels under a new name, optionally checked against a topic set.
        Recorded and queued; poll the answer's `url`."""
        return self._create(request, "qrels", QrelsUploadSerializer)

    @_upload_schema(CollectionUploadSerializer, "a collection (indexed by the worker)")
    @action(detail=False, methods=["post"], url_path="collections")
    def collections(self, request):
        """Documents to index as a new collection.
        Recorded and queued; poll the answer's `url`."""
        return self._create(request, "collection", CollectionUploadSerializer)
