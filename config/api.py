"""The API for scripts, mounted at /api/: each app's resources (from ``<app>/api.py``), the
OpenAPI 3 schema at /api/schema/ and its documentation at /api/docs/ (Swagger UI, its
assets served from static files: nothing is fetched from elsewhere)."""
from django.urls import include, path, re_path
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.decorators import api_view
from rest_framework.exceptions import NotFound
from rest_framework.routers import DefaultRouter

from crowd import api as crowd_api
from evaluation import api as evaluation_api
from judging import api as judging_api
from pooling import api as pooling_api
from projects import api_release
from retrieval import api as retrieval_api
from topics import api as topics_api
from uploads import api as uploads_api

router = DefaultRouter()
router.include_format_suffixes = False
router.register("topic-sets", topics_api.TopicSetViewSet, basename="topic-set")
router.register("studies", crowd_api.StudyViewSet, basename="study")
router.register("collections", retrieval_api.CollectionViewSet, basename="collection")
router.register("models", retrieval_api.RetrievalModelViewSet, basename="model")
router.register("runs", retrieval_api.RunViewSet, basename="run")
router.register("pools", pooling_api.PoolViewSet, basename="pool")
router.register("qrels", judging_api.QrelsViewSet, basename="qrels")
router.register("judging-tasks", judging_api.JudgingTaskViewSet, basename="judging-task")
router.register("judgment-sets", judging_api.JudgmentSetViewSet, basename="judgment-set")
router.register("analyses", evaluation_api.AnalysisViewSet, basename="analysis")
router.register("evaluations", evaluation_api.EvaluationViewSet, basename="evaluation")
router.register("uploads", uploads_api.UploadViewSet, basename="upload")



@extend_schema(exclude=True)
@api_view(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"])
def not_found(request, rest=""):
    """Any other address under /api/: a JSON 404, like every other API error (open to
    anyone: common.roles)."""
    raise NotFound(f"no API endpoint at {request.path} (addresses end with /; see /api/docs/)")


app_name = "api"
urlpatterns = [
    path("topic-sets/<str:name>/topics/", topics_api.TopicList.as_view(), name="topic-list"),
    path("topic-sets/<str:name>/topics/<str:topic_id>/", topics_api.TopicDetail.as_view(),
         name="topic-detail"),
    path("topic-sets/<str:name>/intents/", topics_api.IntentList.as_view(), name="intent-list"),
    path("topic-sets/<str:name>/release/", api_release.ReleaseExport.as_view(),
         name="release-export"),
    path("topic-sets/<str:name>/variants/", topics_api.VariantList.as_view(), name="variant-list"),
    path("runs/<str:pk>/rankings/", retrieval_api.RankingList.as_view(), name="ranking-list"),
    path("pools/<str:ref>/documents/", pooling_api.PoolDocumentList.as_view(),
         name="pool-document-list"),
    path("judgment-sets/<str:name>/judgments/", judging_api.JudgmentList.as_view(),
         name="judgment-list"),
    path("judgment-sets/<str:name>/qrels/", judging_api.QrelsExport.as_view(), name="qrels-export"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api:schema"), name="docs"),
    path("", include(router.urls)),
    re_path(r"^(?P<rest>.*)$", not_found, name="not-found"),
]
