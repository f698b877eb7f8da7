"""API of the evaluation app: the analyses recorded (read, with their results), and
evaluations of stored runs on request (recorded and queued through
:func:`evaluation.services.analysis_create`, computed by a worker as the evaluation pages
and the ``evaluate`` command compute them)."""
from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from common import fileio
from common.api import name_field, service_call
from evaluation import measures, selectors, services
from evaluation.measures.runs import ORDERS
from evaluation.models import Analysis
from judging.selectors import judgment_set_get, qrels_get
from topics.selectors import topic_set_get


class AnalysisSerializer(serializers.ModelSerializer):
    class Meta:
        model = Analysis
        fields = ["id", "kind", "params", "status", "progress", "error", "created_by", "created",
                  "started", "finished"]


class AnalysisDetailSerializer(AnalysisSerializer):
    class Meta(AnalysisSerializer.Meta):
        fields = AnalysisSerializer.Meta.fields + ["result"]


class EvaluationCreateSerializer(serializers.Serializer):
    topic_set = serializers.CharField(validators=[name_field(topic_set_get, "topic set")])
    runs = serializers.ListField(
        child=serializers.CharField(max_length=100), allow_empty=True, default=list, max_length=1000,
        help_text="tags of stored system runs of the topic set; empty: every finished system run")
    measures = serializers.CharField(default="AP nDCG@10 P@10 RR", max_length=2000,
                                     help_text='e.g. "AP nDCG@20 P@10 RBP(p=0.8)"')
    judgments = serializers.CharField(required=False, allow_null=True,
                                      validators=[name_field(judgment_set_get, "judgment set")],
                                      help_text="a judgment set (give this or qrels)")
    qrels = serializers.CharField(required=False, allow_null=True,
                                  validators=[name_field(qrels_get, "qrels")],
                                  help_text="imported qrels, a judgment set read from a qrels file "
                                            "(give this or judgments)")
    complete = serializers.BooleanField(default=False, help_text="average over every judged topic (trec_eval -c)")
    order = serializers.ChoiceField(choices=list(ORDERS), default="trec_eval")

    def validate_measures(self, value):
        try:
            measures.parse_measures(value)
        except fileio.InputError as exc:
            raise serializers.ValidationError(str(exc)) from None
        return value.strip()

    def validate(self, data):
        if bool(data.get("judgments")) == bool(data.get("qrels")):
            raise serializers.ValidationError({"judgments": ["give a judgment set or imported qrels (one of them)"]})
        from retrieval.models import Run
        from retrieval.selectors import run_list

        stored = list(run_list(data["topic_set"]).filter(kind=Run.KIND_SYSTEM, status="done")
                      .order_by("tag").values_list("tag", flat=True))
        wrong = [t for t in data["runs"] if t not in stored]
        if wrong:
            raise serializers.ValidationError(
                {"runs": [f"run {wrong[0]!r} is not a finished system run of topic set {data['topic_set']!r}"]})
        data["runs"] = list(dict.fromkeys(data["runs"])) or stored
        if not data["runs"]:
            raise serializers.ValidationError(
                {"runs": [f"topic set {data['topic_set']!r} has no finished system run; import one with import_run"]})
        return data

    def params(self) -> dict:
        d = self.validated_data
        source = {"judgments": d["judgments"]} if d.get("judgments") else {"qrels": d["qrels"]}
        return {"topic_set": d["topic_set"], "tags": d["runs"], **source, "measures": d["measures"],
                "complete": d["complete"], "order": d["order"]}


def _analysis_or_404(pk: str, kind: str | None = None) -> Analysis:
    if str(pk).isdigit():
        try:
            analysis = selectors.analysis_get(int(pk))
        except ValueError:
            analysis = None
        if analysis is not None and (kind is None or analysis.kind == kind):
            return analysis
    raise Http404(f"no {'evaluation' if kind else 'analysis'} {pk!r}")


KIND_PARAM = OpenApiParameter("kind", str, enum=[k for k, _ in Analysis.KIND_CHOICES],
                              description="only analyses of this kind")


class AnalysisViewSet(viewsets.ReadOnlyModelViewSet):
    """Every analysis asked for (evaluations, agreement, intents, rank correlation,
    variance, variability), newest first; the detail carries the result once done."""

    lookup_value_regex = "[^/]+"

    def get_serializer_class(self):
        return AnalysisDetailSerializer if self.action == "retrieve" else AnalysisSerializer

    @extend_schema(parameters=[KIND_PARAM])
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    def get_queryset(self):
        kind = self.request.query_params.get("kind") or None
        kinds = [k for k, _ in Analysis.KIND_CHOICES]
        if kind is not None and kind not in kinds:
            raise ValidationError({"kind": [f"must be one of {', '.join(kinds)}, not {kind!r}"]})
        return selectors.analysis_list(kind)

    def get_object(self):
        return _analysis_or_404(self.kwargs["pk"])


class EvaluationViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Evaluations of stored system runs against a judgment set or imported qrels.
    Creating one queues it; its ``status`` turns ``done`` with the ``result``."""

    lookup_value_regex = "[^/]+"

    def get_serializer_class(self):
        return {"create": EvaluationCreateSerializer,
                "retrieve": AnalysisDetailSerializer}.get(self.action, AnalysisSerializer)

    def get_queryset(self):
        return selectors.analysis_list(Analysis.KIND_EVALUATE)

    def get_object(self):
        return _analysis_or_404(self.kwargs["pk"], Analysis.KIND_EVALUATE)

    @extend_schema(request=EvaluationCreateSerializer, responses={201: AnalysisSerializer})
    def create(self, request, *args, **kwargs):
        serializer = EvaluationCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        analysis = service_call(services.analysis_create, Analysis.KIND_EVALUATE, serializer.params(),
                                created_by=request.user.get_username())
        return Response(AnalysisSerializer(analysis).data, status=status.HTTP_201_CREATED)
