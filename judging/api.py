"""API of the judging app: judging tasks (read with progress; create through
:func:`judging.services.judging_task_create`), judgment sets, their judgments (labels,
with history on request) and their qrels export (:func:`judging.selectors.qrels_lines`)."""
from __future__ import annotations

import io
import json

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import generics, mixins, renderers, serializers, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from common.api import lookup, name_field, service_call
from common.roles import is_staff
from judging import selectors, services
from judging.aggregate import AGGREGATES
from judging.analysis import task_recall_estimates
from judging.labelfiles import QrelsLine, write_qrels
from judging.models import JudgingTask, JudgmentSet, Label
from pooling.selectors import pool_get

QRELS_KINDS = ("adhoc", "diversity", "ndeval")


class JudgingTaskSerializer(serializers.ModelSerializer):
    pool = serializers.CharField(source="pool.label")
    judgment_set = serializers.CharField(source="judgment_set.name")
    collection = serializers.CharField(source="collection.name", allow_null=True, default=None)

    class Meta:
        model = JudgingTask
        fields = ["name", "pool", "judgment_set", "mode", "scale", "scale_grades", "redundancy",
                  "order", "batch", "lease_minutes", "per_topic", "assessors", "items_count",
                  "collection", "stop_rule", "created"]


class ProgressCountsSerializer(serializers.Serializer):
    items = serializers.IntegerField()
    slots = serializers.IntegerField()
    done = serializers.IntegerField()
    leased = serializers.IntegerField()
    remaining = serializers.IntegerField()


class ProgressSerializer(serializers.Serializer):
    total = ProgressCountsSerializer()
    topics = serializers.DictField(child=ProgressCountsSerializer())


class EstimateSerializer(serializers.Serializer):
    """:class:`judging.stopping.Estimate`: recall is at least ``recall_low`` (95%)."""

    judged = serializers.IntegerField()
    found = serializers.IntegerField()
    pool = serializers.IntegerField()
    remaining = serializers.FloatField(allow_null=True)
    remaining_high = serializers.IntegerField()
    recall = serializers.FloatField(allow_null=True)
    recall_low = serializers.FloatField(allow_null=True)


class TopicRecallSerializer(serializers.Serializer):
    estimate = EstimateSerializer()
    stopped_at = serializers.DateTimeField(allow_null=True)
    stop_note = serializers.CharField(allow_blank=True)
    resumed = serializers.BooleanField()


class RecallSerializer(serializers.Serializer):
    rule = serializers.CharField(allow_null=True)
    total = EstimateSerializer(allow_null=True)
    topics = serializers.DictField(child=TopicRecallSerializer())


class JudgingTaskDetailSerializer(JudgingTaskSerializer):
    progress = serializers.SerializerMethodField()
    recall = serializers.SerializerMethodField()

    class Meta(JudgingTaskSerializer.Meta):
        fields = JudgingTaskSerializer.Meta.fields + ["progress", "recall"]

    @extend_schema_field(ProgressSerializer)
    def get_progress(self, task) -> dict:
        return selectors.task_progress(task)

    @extend_schema_field(RecallSerializer)
    def get_recall(self, task) -> dict:
        """The estimated recall of the pool per topic and overall (the task page's)."""
        est = task_recall_estimates(task)
        return RecallSerializer({
            "rule": str(est["rule"]) if est["rule"] else None, "total": est["total"],
            "topics": {t["topic_id"]: t for t in est["topics"]}}).data


class AssessorTaskSerializer(JudgingTaskSerializer):
    """A task as its assessor sees it: not who else judges it."""

    class Meta(JudgingTaskSerializer.Meta):
        fields = [f for f in JudgingTaskSerializer.Meta.fields if f != "assessors"]


class AssessorTaskDetailSerializer(JudgingTaskDetailSerializer):
    """Not who else judges it, nor what their judgments found (the recall estimate)."""

    class Meta(JudgingTaskDetailSerializer.Meta):
        fields = [f for f in JudgingTaskDetailSerializer.Meta.fields
                  if f not in ("assessors", "recall")]


class JudgingTaskCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    pool = serializers.CharField(help_text="the pool's name or id",
                                 validators=[name_field(pool_get, "pool")])
    mode = serializers.ChoiceField(choices=[m for m, _ in JudgingTask.MODE_CHOICES],
                                   default=JudgingTask.MODE_INTENT)
    scale = serializers.CharField(default="trec-web", max_length=20)
    custom_grades = serializers.CharField(required=False, allow_null=True,
                                          help_text="for scale custom: value:label:key,…")
    redundancy = serializers.IntegerField(
        min_value=0, max_value=services.MAX_REDUNDANCY, default=None, allow_null=True,
        help_text="assessors per document (default 1); leave it out in user mode, where "
                  "every writer of a topic judges its documents")
    order = serializers.ChoiceField(choices=[o for o, _ in JudgingTask.ORDER_CHOICES],
                                    default=JudgingTask.ORDER_POOL)
    batch = serializers.IntegerField(min_value=1, max_value=1000, default=10)
    lease_minutes = serializers.IntegerField(min_value=1, max_value=100000, default=30)
    assessors = serializers.ListField(child=serializers.CharField(max_length=200), default=list,
                                      max_length=10000)
    per_topic = serializers.IntegerField(min_value=1, max_value=100000, required=False, allow_null=True)
    stop_rule = serializers.CharField(
        max_length=40, required=False, allow_blank=True, default="",
        help_text="recall:TARGET:CONFIDENCE (e.g. recall:0.9:0.95) or knee; empty: none")
    sample_budget = serializers.CharField(
        max_length=20, required=False, allow_null=True, default=None,
        help_text="sample mode: documents per topic (e.g. 60) or a share of each topic's pool "
                  "(e.g. 20%)")
    sample_strata = serializers.CharField(
        max_length=200, required=False, allow_null=True, default=None,
        help_text="sample mode: depth:10,20,50 (the default) or rbp:H")
    sample_seed = serializers.IntegerField(min_value=0, max_value=2**31 - 1, default=0)


class JudgmentSetSerializer(serializers.ModelSerializer):
    topic_set = serializers.CharField(source="topic_set.name", allow_null=True, default=None)

    class Meta:
        model = JudgmentSet
        fields = ["name", "source", "topic_set", "format", "labels_count", "checksum", "created"]


class JudgmentSerializer(serializers.ModelSerializer):
    class Meta:
        model = Label
        fields = ["topic_id", "intent_id", "docid", "assessor", "grade", "cannot_judge",
                  "rationale", "seconds", "created", "revision", "current", "withdrawn",
                  "simulated"]


class QrelsLineSerializer(serializers.Serializer):
    topic_id = serializers.CharField()
    intent_id = serializers.CharField(help_text='the intent, or "0" in ad hoc qrels')
    docid = serializers.CharField()
    grade = serializers.IntegerField()


class QrelsExportSerializer(serializers.Serializer):
    judgment_set = serializers.CharField()
    kind = serializers.ChoiceField(choices=QRELS_KINDS)
    aggregate = serializers.CharField()
    lines = QrelsLineSerializer(many=True)


def task_or_404(name: str) -> JudgingTask:
    return lookup(selectors.task_get, name, "judging task")


def assessor_task_or_404(request, name: str) -> JudgingTask:
    """The task for an organiser; for an assessor only a task that admits them (a 404 that
    names no other task otherwise)."""
    if is_staff(request.user):
        return task_or_404(name)
    user = request.user.get_username()
    try:
        task = selectors.task_get(name)
    except ValueError:
        task = None
    if task is None or not selectors.task_judged_by(task, user):
        raise Http404(f"no judging task {name!r} that you judge")
    return task


def judgment_set_or_404(name: str) -> JudgmentSet:
    return lookup(selectors.judgment_set_get, name, "judgment set")


class JudgingTaskViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Judging tasks, newest first, by name; a task's detail carries its progress. An
    assessor sees only the tasks they judge, without the other assessors' names."""

    lookup_field = "name"
    lookup_value_regex = "[^/]+"

    def get_serializer_class(self):
        if self.action == "create":
            return JudgingTaskCreateSerializer
        # the schema documents the organiser's view (it is generated with a fake view)
        staff = getattr(self, "swagger_fake_view", False) or is_staff(self.request.user)
        if self.action == "retrieve":
            return JudgingTaskDetailSerializer if staff else AssessorTaskDetailSerializer
        return JudgingTaskSerializer if staff else AssessorTaskSerializer

    def get_queryset(self):
        if is_staff(self.request.user):
            return selectors.task_list().select_related("collection")
        return selectors.task_list_judged_by(self.request.user.get_username())

    def get_object(self):
        return assessor_task_or_404(self.request, self.kwargs["name"])

    @extend_schema(request=JudgingTaskCreateSerializer, responses={201: JudgingTaskSerializer})
    def create(self, request, *args, **kwargs):
        serializer = JudgingTaskCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        d = serializer.validated_data
        task = service_call(
            services.judging_task_create, pool=pool_get(d["pool"]), name=d["name"], mode=d["mode"],
            scale=d["scale"], custom_grades=d.get("custom_grades"), redundancy=d["redundancy"],
            order=d["order"], batch=d["batch"], lease_minutes=d["lease_minutes"],
            assessors=d["assessors"], per_topic=d.get("per_topic"), stop_rule=d["stop_rule"],
            sample_strata=d["sample_strata"], sample_budget=d["sample_budget"],
            sample_seed=d["sample_seed"])
        return Response(JudgingTaskSerializer(task).data, status=status.HTTP_201_CREATED)


class QrelsSerializer(serializers.ModelSerializer):
    judgments_count = serializers.IntegerField(source="labels_count", read_only=True)

    class Meta:
        model = JudgmentSet
        fields = ["name", "format", "judgments_count", "checksum", "created"]


class QrelsViewSet(viewsets.ReadOnlyModelViewSet):
    """Relevance judgments under the name users know, qrels: every judgment set (an
    imported qrels file is one, its judgments its lines)."""

    serializer_class = QrelsSerializer
    lookup_field = "name"
    lookup_value_regex = "[^/]+"

    def get_queryset(self):
        return selectors.judgment_set_list()

    def get_object(self):
        return lookup(selectors.qrels_get, self.kwargs["name"], "qrels")


class JudgmentSetViewSet(viewsets.ReadOnlyModelViewSet):
    """Judgment sets: imported, or filled by a judging task of the same name."""

    serializer_class = JudgmentSetSerializer
    lookup_field = "name"
    lookup_value_regex = "[^/]+"

    def get_queryset(self):
        return selectors.judgment_set_list().select_related("topic_set")

    def get_object(self):
        return judgment_set_or_404(self.kwargs["name"])


@extend_schema(parameters=[
    OpenApiParameter("topic", str, description="only this topic id"),
    OpenApiParameter("history", bool, description="every revision and withdrawn label too "
                     "(default: the labels that count)"),
])
class JudgmentList(generics.ListAPIView):
    """The labels of a judgment set in the order made: by default the current ones. An
    assessor reads only their own labels, in the set of a task they judge."""

    serializer_class = JudgmentSerializer

    def get_queryset(self):
        name = self.kwargs["name"]
        if is_staff(self.request.user):
            jset = judgment_set_or_404(name)
            qs = Label.objects.filter(judgment_set=jset)
        else:
            user = self.request.user.get_username()
            task = (JudgingTask.objects.filter(judgment_set__name=name)
                    .select_related("judgment_set").first())
            if task is None or not selectors.task_judged_by(task, user):
                raise Http404(f"no judgment set {name!r} of a task that you judge")
            qs = Label.objects.filter(judgment_set=task.judgment_set, assessor=user)
        history = _flag(self.request, "history")
        topic = self.request.query_params.get("topic")
        qs = qs.order_by("id")
        if not history:
            qs = qs.filter(current=True, withdrawn=False)
        return qs.filter(topic_id=topic) if topic else qs


def _flag(request, name: str) -> bool:
    raw = request.query_params.get(name, "false").lower()
    if raw not in ("true", "false", "1", "0"):
        raise ValidationError({name: [f"must be true or false, not {raw!r}"]})
    return raw in ("true", "1")


class QrelsTextRenderer(renderers.BaseRenderer):
    """``Accept: text/plain``: the qrels file itself (``topic second docid grade`` lines,
    as ``export_qrels`` writes them); an error is its message on one line."""

    media_type = "text/plain"
    format = "txt"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        out = io.StringIO()
        if isinstance(data, dict) and "lines" in data:
            write_qrels(out, (QrelsLine(ln["topic_id"], ln["intent_id"], ln["docid"], ln["grade"])
                              for ln in data["lines"]))
        else:
            out.write(f"{json.dumps(data)}\n")
        return out.getvalue().encode(self.charset)


class QrelsExport(APIView):
    """The qrels of a judgment set, each item's labels combined by ``aggregate`` — the
    lines ``export_qrels`` writes: as JSON, or with ``Accept: text/plain`` as the qrels
    file itself."""

    serializer_class = QrelsExportSerializer
    renderer_classes = [renderers.JSONRenderer, QrelsTextRenderer]

    @extend_schema(parameters=[
        OpenApiParameter("kind", str, enum=list(QRELS_KINDS), description="adhoc (default), diversity or ndeval"),
        OpenApiParameter("aggregate", str, description=f"{', '.join(AGGREGATES)} or assessor:NAME "
                         "(default majority)"),
        OpenApiParameter("adhoc_intent", str, description="adhoc from this intent's labels"),
    ], responses={(200, "application/json"): QrelsExportSerializer, (200, "text/plain"): OpenApiTypes.STR})
    def get(self, request, name):
        jset = judgment_set_or_404(name)
        kind = request.query_params.get("kind", "adhoc")
        if kind not in QRELS_KINDS:
            raise ValidationError({"kind": [f"must be one of {', '.join(QRELS_KINDS)}, not {kind!r}"]})
        aggregate = request.query_params.get("aggregate", "majority")
        adhoc_intent = request.query_params.get("adhoc_intent")
        lines = service_call(selectors.qrels_lines, jset, kind, aggregate=aggregate,
                             adhoc_intent=adhoc_intent)
        return Response(QrelsExportSerializer({
            "judgment_set": jset.name, "kind": kind, "aggregate": aggregate,
            "lines": [{"topic_id": ln.topic_id, "intent_id": ln.second, "docid": ln.docid,
                       "grade": ln.grade} for ln in lines],
        }).data)
