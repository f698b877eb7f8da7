"""API of the retrieval app: collections and retrieval models (read), runs (read; create
queues retrieval through :func:`retrieval.services.run_create`), and the rankings of a run
as lists of ``{rank, docid, score}`` read from the packed arrays, to a bounded depth."""
from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, mixins, serializers, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from common.api import lookup, name_field, service_call
from retrieval import selectors, services
from retrieval.models import Collection, RetrievalModel, Run
from retrieval.rankings import unpack
from topics.selectors import topic_set_get

MAX_RANKING_DEPTH = 1000
DEFAULT_RANKING_DEPTH = 10


class CollectionSerializer(serializers.ModelSerializer):
    class Meta:
        model = Collection
        fields = ["name", "format", "doc_count", "status", "error", "anserini_version",
                  "analyzer", "checksum", "created"]


class RetrievalModelSerializer(serializers.ModelSerializer):
    class Meta:
        model = RetrievalModel
        fields = ["name", "kind", "k1", "b", "mu", "sdm_base", "term_weight", "ordered_weight",
                  "unordered_weight", "description"]


class RunSerializer(serializers.ModelSerializer):
    topic_set = serializers.CharField(source="topic_set.name")
    collection = serializers.CharField(source="collection.name", allow_null=True, default=None)
    model = serializers.CharField(source="model.name", allow_null=True, default=None)

    class Meta:
        model = Run
        fields = ["id", "kind", "topic_set", "collection", "model", "source", "tag", "depth",
                  "status", "total", "completed", "error", "created", "started", "finished"]


class RunCreateSerializer(serializers.Serializer):
    topic_set = serializers.CharField(validators=[name_field(topic_set_get, "topic set")])
    collection = serializers.CharField(validators=[name_field(selectors.collection_get, "collection")])
    model = serializers.CharField(validators=[name_field(selectors.retrieval_model_get, "model")])
    source = serializers.ChoiceField(choices=["titles", "descriptions", "variants"], default="titles")
    depth = serializers.IntegerField(min_value=1, max_value=10000, default=1000)


class EntrySerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    docid = serializers.CharField()
    score = serializers.FloatField()


class RankingSerializer(serializers.Serializer):
    qid = serializers.CharField(help_text="the TREC query id (topic id, or topic:label for variants)")
    topic_id = serializers.CharField()
    label = serializers.CharField()
    query_text = serializers.CharField()
    weight = serializers.IntegerField(help_text="how many people typed this query")
    length = serializers.IntegerField(help_text="documents in the stored ranking", allow_null=True)
    entries = EntrySerializer(many=True, help_text="the top `depth` documents; empty until retrieved")


class CollectionViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = CollectionSerializer
    lookup_field = "name"
    lookup_value_regex = "[^/]+"

    def get_queryset(self):
        return selectors.collection_list()

    def get_object(self):
        return lookup(selectors.collection_get, self.kwargs["name"], "collection")


class RetrievalModelViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = RetrievalModelSerializer
    lookup_field = "name"
    lookup_value_regex = "[^/]+"

    def get_queryset(self):
        return selectors.retrieval_model_list()

    def get_object(self):
        return lookup(selectors.retrieval_model_get, self.kwargs["name"], "retrieval model")


def run_or_404(run_id: str) -> Run:
    if not str(run_id).isdigit():
        raise Http404(f"no run with id {run_id!r}")
    return lookup(selectors.run_get, int(run_id), "run")


class RunViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Runs, newest first. Creating one records its queries and queues what is not yet
    retrieved; ``status`` and ``completed`` show the progress."""

    lookup_value_regex = "[^/]+"

    def get_serializer_class(self):
        return RunCreateSerializer if self.action == "create" else RunSerializer

    @extend_schema(parameters=[OpenApiParameter("topic_set", str, description="only runs of this topic set")])
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    def get_queryset(self):
        return selectors.run_list(self.request.query_params.get("topic_set") or None).order_by(
            "-created", "-id")

    def get_object(self):
        return run_or_404(self.kwargs["pk"])

    @extend_schema(request=RunCreateSerializer, responses={201: RunSerializer})
    def create(self, request, *args, **kwargs):
        serializer = RunCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        d = serializer.validated_data
        run = service_call(services.run_create, topic_set_name=d["topic_set"],
                           collection_name=d["collection"], model_name=d["model"],
                           depth=d["depth"], source=d["source"])
        return Response(RunSerializer(run).data, status=status.HTTP_201_CREATED)


def _depth(request) -> int:
    raw = request.query_params.get("depth")
    if raw is None:
        return DEFAULT_RANKING_DEPTH
    try:
        depth = int(raw)
    except ValueError:
        raise ValidationError({"depth": f"must be a whole number, not {raw!r}"}) from None
    if not 1 <= depth <= MAX_RANKING_DEPTH:
        raise ValidationError({"depth": f"must be between 1 and {MAX_RANKING_DEPTH}"})
    return depth


@extend_schema(parameters=[
    OpenApiParameter("topic", str, description="only this topic id"),
    OpenApiParameter("depth", int, description=f"documents per ranking (default {DEFAULT_RANKING_DEPTH}, "
                     f"at most {MAX_RANKING_DEPTH})"),
])
class RankingList(generics.ListAPIView):
    """The rankings of a run, one per query (by topic id, then label), each the top
    ``depth`` documents in stored order: (-score, docid)."""

    serializer_class = RankingSerializer

    def get_queryset(self):
        self.run = run_or_404(self.kwargs["pk"])
        qs = selectors.run_query_list(self.run)
        topic = self.request.query_params.get("topic")
        return qs.filter(topic__topic_id=topic) if topic else qs

    def list(self, request, *args, **kwargs):
        depth = _depth(request)
        page = self.paginate_queryset(self.get_queryset())
        cut = []
        for rq in page:
            if rq.ranking_id is None:
                cut.append((rq, None, [], []))
            else:
                packed = unpack(rq.ranking.docids, rq.ranking.scores)
                cut.append((rq, len(packed), packed.docids[:depth], packed.scores[:depth]))
        ids = [int(i) for _, _, d, _ in cut for i in d]
        names = selectors.docid_strings(ids) if ids else {}
        rows = [{
            "qid": selectors.run_qid(self.run, rq.topic.topic_id, rq.label),
            "topic_id": rq.topic.topic_id, "label": rq.label, "query_text": rq.query_text,
            "weight": rq.weight, "length": length,
            "entries": [{"rank": r, "docid": names[int(i)], "score": float(s)}
                        for r, (i, s) in enumerate(zip(docids, scores), 1)],
        } for rq, length, docids, scores in cut]
        return self.get_paginated_response(RankingSerializer(rows, many=True).data)
