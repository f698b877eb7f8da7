"""API of the pooling app: pools (read; create records a queued pool and queues its build
through :func:`pooling.services.pool_create`), a pool's documents per topic in priority
order. (Imported qrels are judgment sets: the judging app's API serves them.)"""
from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import generics, mixins, serializers, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from common.api import lookup, name_field, service_call
from pooling import selectors, services
from pooling.models import Pool
from retrieval.selectors import collection_get, retrieval_model_get
from topics.selectors import topic_set_get


class PoolRunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField(help_text="retrieval (retrieved here) or system (imported)")
    tag = serializers.CharField(help_text="the system run's tag; empty for a run retrieved here")
    model = serializers.CharField(allow_null=True, help_text="the retrieval model; null for an "
                                                             "imported system run")
    source = serializers.CharField(help_text="what was retrieved: titles, descriptions, "
                                             "variants, or system for an imported run")


class PoolSerializer(serializers.ModelSerializer):
    topic_set = serializers.CharField(source="topic_set.name")
    collection = serializers.CharField(source="collection.name", allow_null=True, default=None)
    model = serializers.CharField(source="model.name", allow_null=True, default=None)
    label = serializers.CharField(help_text="the pool's name, else pool-<id>")
    runs = serializers.SerializerMethodField(
        help_text="the runs the pool was built from, fixed when it was created")

    class Meta:
        model = Pool
        fields = ["id", "name", "label", "topic_set", "sources", "strategy", "depth", "p", "budget",
                  "budget_scope", "collection", "model", "runs", "status", "progress", "error",
                  "topics_count", "documents_count", "created", "finished"]

    @extend_schema_field(PoolRunSerializer(many=True))
    def get_runs(self, pool) -> list[dict]:
        return selectors.pool_run_list(pool)


class PoolCreateSerializer(serializers.Serializer):
    topic_set = serializers.CharField(validators=[name_field(topic_set_get, "topic set")])
    sources = serializers.ChoiceField(choices=[c for c, _ in Pool.SOURCES_CHOICES])
    strategy = serializers.ChoiceField(choices=[c for c, _ in Pool.STRATEGY_CHOICES], default="depth")
    depth = serializers.IntegerField(min_value=1, max_value=10000, required=False, allow_null=True,
                                     help_text="required for depth; rbp defaults it to the rankings' depth")
    p = serializers.FloatField(min_value=0, max_value=1, default=0.95)
    budget = serializers.IntegerField(min_value=1, max_value=10_000_000, required=False, allow_null=True)
    budget_scope = serializers.ChoiceField(choices=[c for c, _ in Pool.SCOPE_CHOICES], default="topic")
    name = serializers.CharField(max_length=100, required=False, allow_null=True)
    model = serializers.CharField(required=False, allow_null=True,
                                  validators=[name_field(retrieval_model_get, "model")])
    collection = serializers.CharField(required=False, allow_null=True,
                                       validators=[name_field(collection_get, "collection")])


class PooledDocumentSerializer(serializers.Serializer):
    topic_id = serializers.CharField()
    rank = serializers.IntegerField(help_text="priority: 1 is judged first")
    docid = serializers.CharField()
    weight = serializers.FloatField()
    min_rank = serializers.IntegerField()
    users = serializers.IntegerField()
    systems = serializers.IntegerField()


def pool_or_404(ref: str) -> Pool:
    return lookup(selectors.pool_get, ref, "pool")


class PoolViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Pools, newest first, looked up by name or id. A created pool is queued and built
    by a worker; ``status`` and ``progress`` follow it."""

    lookup_field = "ref"
    lookup_value_regex = "[^/]+"

    def get_serializer_class(self):
        return PoolCreateSerializer if self.action == "create" else PoolSerializer

    @extend_schema(parameters=[OpenApiParameter("topic_set", str, description="only pools of this topic set")])
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    def get_queryset(self):
        return selectors.pool_list(self.request.query_params.get("topic_set") or None).order_by(
            "-created", "-id")

    def get_object(self):
        return pool_or_404(self.kwargs["ref"])

    @extend_schema(request=PoolCreateSerializer, responses={201: PoolSerializer})
    def create(self, request, *args, **kwargs):
        serializer = PoolCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        d = serializer.validated_data
        pool = service_call(services.pool_create, topic_set_name=d["topic_set"], sources=d["sources"],
                            depth=d.get("depth"), strategy=d["strategy"], p=d["p"],
                            budget=d.get("budget"), budget_scope=d["budget_scope"],
                            model_name=d.get("model"), collection_name=d.get("collection"),
                            name=d.get("name") or None, enqueue=True)
        return Response(PoolSerializer(pool).data, status=status.HTTP_201_CREATED)


@extend_schema(parameters=[OpenApiParameter("topic", str, required=True,
                                            description="the topic whose documents to list")])
class PoolDocumentList(generics.ListAPIView):
    """The pooled documents of one topic, in priority order."""

    serializer_class = PooledDocumentSerializer

    def get_queryset(self):
        pool = pool_or_404(self.kwargs["ref"])
        topic = self.request.query_params.get("topic")
        if not topic:
            raise ValidationError({"topic": ["give the topic id whose documents to list"]})
        return list(selectors.pool_documents(pool, [topic]))

