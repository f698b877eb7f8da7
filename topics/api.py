"""API of the topics app: topic sets, topics with statements and intents, and query
variants (read; organisers import topics and variants through the same services as the
import commands)."""
from __future__ import annotations

from django.db.models import Q
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers, status, viewsets
from rest_framework.response import Response

from common.api import KeysetPages, lookup, service_call
from common.fileio import clean_name

from common.naturalsort import natural_sort_key
from topics import selectors, services
from topics.models import Intent, Topic
from topics.topicfiles import IntentRecord, TopicRecord
from topics.variantfiles import VariantRecord


class TopicSetSerializer(serializers.Serializer):
    name = serializers.CharField()
    created = serializers.DateTimeField()
    topics_count = serializers.IntegerField(source="n_topics")
    answers_count = serializers.IntegerField(source="n_answers",
                                             help_text="sum of the variants' counts (0 for none)")


class IntentSerializer(serializers.Serializer):
    intent_id = serializers.CharField()
    description = serializers.CharField()
    kind = serializers.CharField()


class TopicIntentSerializer(IntentSerializer):
    topic_id = serializers.CharField(source="topic.topic_id")


class TopicSerializer(serializers.Serializer):
    topic_id = serializers.CharField()
    title = serializers.CharField()
    description = serializers.CharField()
    narrative = serializers.CharField()
    kind = serializers.CharField()
    statements = serializers.SerializerMethodField()
    intents = IntentSerializer(many=True)

    def get_statements(self, topic) -> list[str]:
        return [s.text for s in topic.statements.all()]


class VariantSerializer(serializers.Serializer):
    topic_id = serializers.CharField(source="topic.topic_id")
    variant_id = serializers.CharField()
    label = serializers.SerializerMethodField(help_text="the stable label runs use for this text")
    raw = serializers.CharField()
    normalised = serializers.CharField()
    count = serializers.IntegerField()
    worker_id = serializers.CharField()
    estimate = serializers.CharField()
    source = serializers.CharField()
    created = serializers.DateTimeField()

    def get_label(self, variant) -> str:
        return selectors.variant_label(variant.normalised)


def _id_field(what: str, max_length: int = 100, **kwargs) -> serializers.CharField:
    def check(value):
        try:
            clean_name(value, what, max_chars=max_length)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None

    return serializers.CharField(max_length=max_length, validators=[check], **kwargs)


class IntentInSerializer(serializers.Serializer):
    intent_id = _id_field("intent id")
    description = serializers.CharField(required=False, allow_blank=True, default="")
    kind = serializers.CharField(max_length=20, required=False, allow_blank=True, default="")


class TopicInSerializer(serializers.Serializer):
    topic_id = _id_field("topic id")
    title = serializers.CharField(required=False, allow_blank=True, default="")
    description = serializers.CharField(required=False, allow_blank=True, default="")
    narrative = serializers.CharField(required=False, allow_blank=True, default="")
    kind = serializers.CharField(max_length=20, required=False, allow_blank=True, default="")
    statements = serializers.ListField(child=serializers.CharField(), required=False, default=list,
                                       max_length=1000)
    intents = IntentInSerializer(many=True, required=False, default=list)


class TopicsImportSerializer(serializers.Serializer):
    topics = TopicInSerializer(many=True, allow_empty=False, max_length=100000)
    replace = serializers.BooleanField(default=False, help_text="overwrite topics already in the set")


class TopicsImportedSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    replaced = serializers.IntegerField()


class VariantInSerializer(serializers.Serializer):
    topic_id = _id_field("topic id")
    raw = serializers.CharField(max_length=100000)
    worker_id = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    count = serializers.IntegerField(min_value=1, max_value=1_000_000, default=1)
    estimate = serializers.CharField(max_length=50, required=False, allow_blank=True, default="")
    variant_id = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")


class VariantsImportSerializer(serializers.Serializer):
    variants = VariantInSerializer(many=True, allow_empty=False, max_length=1_000_000)
    create_topics = serializers.BooleanField(default=False, help_text="create topics not yet in the set")
    replace = serializers.BooleanField(default=False,
                                       help_text="first delete the imported variants of the topics named")
    spell_correct = serializers.BooleanField(default=False)


class VariantsImportedSerializer(serializers.Serializer):
    variants = serializers.IntegerField()
    topics_created = serializers.IntegerField()
    replaced = serializers.IntegerField()
    corrected = serializers.IntegerField()


def _valid(serializer_class, request) -> dict:
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def _topic_set(name: str):
    return lookup(selectors.topic_set_get, name, "topic set")


class TopicSetViewSet(viewsets.ReadOnlyModelViewSet):
    """Topic sets with their numbers of topics and answers."""

    serializer_class = TopicSetSerializer
    lookup_field = "name"
    lookup_value_regex = "[^/]+"

    def get_queryset(self):
        return selectors.topic_set_list()

    def get_object(self):
        name = self.kwargs["name"]
        obj = self.get_queryset().filter(name=name).first()
        if obj is None:
            _topic_set(name)  # 404 naming the known sets
        return obj


class TopicList(generics.ListAPIView):
    """The topics of a set in natural topic-id order, with statements and intents, a page
    at a time: ``next`` continues after the last topic (``?after=<topic id>``).
    Posting topics imports them (all or nothing; the set is created if missing)."""

    serializer_class = TopicSerializer
    pagination_class = KeysetPages

    @extend_schema(request=TopicsImportSerializer, responses={201: TopicsImportedSerializer})
    def post(self, request, name):
        d = _valid(TopicsImportSerializer, request)
        records = [TopicRecord(
            topic_id=t["topic_id"], title=t["title"], description=t["description"],
            narrative=t["narrative"], kind=t["kind"], statements=tuple(t["statements"]),
            intents=tuple(IntentRecord(**i) for i in t["intents"]), source=f"topics[{n}]")
            for n, t in enumerate(d["topics"])]
        done = service_call(services.topics_import, name, records, replace=d["replace"])
        return Response(TopicsImportedSerializer(done).data, status=status.HTTP_201_CREATED)

    def get_queryset(self):
        ts = _topic_set(self.kwargs["name"])
        return (Topic.objects.filter(topic_set=ts).order_by("sort_key")
                .prefetch_related("statements", "intents"))

    def keyset_filter(self, queryset, after):
        return queryset.filter(sort_key__gt=natural_sort_key(after))

    def keyset_after(self, topic) -> str:
        return topic.topic_id


class TopicDetail(generics.RetrieveAPIView):
    serializer_class = TopicSerializer

    def get_object(self):
        ts = _topic_set(self.kwargs["name"])
        return lookup(lambda tid: selectors.topic_get(ts, tid), self.kwargs["topic_id"], "topic")


class IntentList(generics.ListAPIView):
    """Every intent (subtopic) of a topic set, by topic in natural order, a page at a
    time: ``next`` continues after the last topic of the page (``?after=<topic id>``)."""

    serializer_class = TopicIntentSerializer
    pagination_class = KeysetPages

    def get_queryset(self):
        ts = _topic_set(self.kwargs["name"])
        return (Intent.objects.filter(topic__topic_set=ts).select_related("topic")
                .order_by("topic__sort_key", "intent_id"))

    def keyset_filter(self, queryset, after):
        # "<topic id>" or "<topic id> <intent id>" (ids have no spaces)
        topic_id, _, intent_id = after.partition(" ")
        key = natural_sort_key(topic_id)
        return queryset.filter(Q(topic__sort_key__gt=key)
                               | Q(topic__sort_key=key, intent_id__gt=intent_id))

    def keyset_after(self, intent) -> str:
        return f"{intent.topic.topic_id} {intent.intent_id}"


TOPIC_PARAM = OpenApiParameter("topic", str, description="only this topic id")


class VariantList(generics.ListAPIView):
    """Query variants of a topic set in the order stored. Posting variants imports them
    (all or nothing; duplicates are counted, never merged)."""

    serializer_class = VariantSerializer

    @extend_schema(request=VariantsImportSerializer, responses={201: VariantsImportedSerializer})
    def post(self, request, name):
        d = _valid(VariantsImportSerializer, request)
        if not d["create_topics"]:
            _topic_set(name)
        records = [VariantRecord(**v, source=f"variants[{n}]") for n, v in enumerate(d["variants"])]
        done = service_call(services.variants_import, name, records, create_topics=d["create_topics"],
                            replace=d["replace"], spell_correct=d["spell_correct"])
        return Response(VariantsImportedSerializer(done).data, status=status.HTTP_201_CREATED)

    @extend_schema(parameters=[TOPIC_PARAM])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        ts = _topic_set(self.kwargs["name"])
        qs = selectors.variant_list(ts.name)
        topic = self.request.query_params.get("topic")
        return qs.filter(topic__topic_id=topic) if topic else qs
