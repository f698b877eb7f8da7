"""API of the crowd app: studies (organisers: list, read, create)."""
from __future__ import annotations

from django.http import Http404
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.response import Response

from common.api import name_field, service_call
from crowd import selectors, services
from crowd.models import Study
from topics import selectors as topics_selectors


class StudySerializer(serializers.ModelSerializer):
    topic_set = serializers.CharField(source="topic_set.name")
    entry_url = serializers.SerializerMethodField(
        help_text="the public link workers arrive at (add the platform's parameters)")

    class Meta:
        model = Study
        fields = ["id", "name", "title", "topic_set", "slug", "entry_url", "is_open",
                  "prolific_study_id", "mturk_hit_ids", "responses_per_statement",
                  "statements_per_worker", "consent_text", "instructions", "question_text",
                  "question_choices", "completion_code", "max_query_chars",
                  "min_seconds_per_answer", "copy_jaccard_threshold", "copy_min_tokens",
                  "spell_correct", "assignment_timeout_minutes", "created"]

    def get_entry_url(self, study) -> str:
        path = reverse("crowd:study_entry", kwargs={"slug": study.slug})
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path


class StudyCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    topic_set = serializers.CharField(validators=[name_field(topics_selectors.topic_set_get, "topic set")])
    consent_text = serializers.CharField()
    completion_code = serializers.CharField(max_length=100)
    title = serializers.CharField(max_length=200, required=False, allow_blank=True)
    instructions = serializers.CharField(required=False, allow_blank=True)
    prolific_study_id = serializers.CharField(max_length=200, required=False, allow_blank=True)
    mturk_hit_ids = serializers.CharField(required=False, allow_blank=True)
    responses_per_statement = serializers.IntegerField(min_value=1, max_value=10000, required=False)
    statements_per_worker = serializers.IntegerField(min_value=1, max_value=10000, required=False)
    question_text = serializers.CharField(max_length=500, required=False, allow_blank=True)
    question_choices = serializers.CharField(required=False, allow_blank=True)
    max_query_chars = serializers.IntegerField(min_value=1, max_value=100000, required=False)
    min_seconds_per_answer = serializers.FloatField(min_value=0, max_value=86400, required=False)
    spell_correct = serializers.BooleanField(required=False)
    assignment_timeout_minutes = serializers.IntegerField(min_value=1, max_value=100000,
                                                          required=False)


class StudyViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Studies collecting query variants (organisers only: they hold completion codes)."""

    lookup_value_regex = "[^/]+"

    def get_queryset(self):
        return selectors.study_list().order_by("-created", "-id")

    def get_serializer_class(self):
        return StudyCreateSerializer if self.action == "create" else StudySerializer

    def get_object(self):
        pk = self.kwargs["pk"]
        obj = self.get_queryset().filter(pk=int(pk)).first() if pk.isdigit() else None
        if obj is None:
            raise Http404(f"no study {pk!r}")
        return obj

    @extend_schema(request=StudyCreateSerializer, responses={201: StudySerializer})
    def create(self, request, *args, **kwargs):
        data = self._validated(request)
        options = {k: v for k, v in data.items()
                   if k not in ("name", "topic_set", "consent_text", "completion_code")}
        study = service_call(services.study_create, topic_set=topics_selectors.topic_set_get(data["topic_set"]),
                             name=data["name"], consent_text=data["consent_text"],
                             completion_code=data["completion_code"], **options)
        return Response(StudySerializer(study, context={"request": request}).data,
                        status=status.HTTP_201_CREATED)

    def _validated(self, request) -> dict:
        serializer = StudyCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data
