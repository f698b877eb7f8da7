"""API: a topic set's release as a ``.tar.gz`` (organisers only)."""
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.views import APIView

from common.api import ERROR_STATUSES, lookup

from projects.release import LICENCES, ReleaseError
from projects.services import release_archive
from projects.views_release import archive_response
from topics import selectors as topics_selectors


class ReleaseExport(APIView):
    """The release of a topic set (``export_collection``'s archive): topics, variants with
    pseudonymous workers, runs, pools, labels, qrels, figures, datasheet, citation,
    licence and manifest. Staff only (``common.roles.API``)."""

    @extend_schema(parameters=[
        OpenApiParameter("licence", str, required=True, enum=list(LICENCES),
                         description="SPDX id of the release's licence"),
        OpenApiParameter("title", str, description="title (default: the topic set's name)"),
        OpenApiParameter("author", str, many=True, description="an author; repeat for several"),
    ], responses={(200, "application/gzip"): OpenApiTypes.BINARY,
                  # errors are JSON whatever the success type (common.api.ERROR_STATUSES)
                  **{(code, "application/json"): OpenApiResponse(
                      response=OpenApiTypes.OBJECT, description=text)
                     for code, text in ((400, ERROR_STATUSES["400"]),
                                        (401, ERROR_STATUSES["401"]),
                                        (403, ERROR_STATUSES["403"]),
                                        (404, ERROR_STATUSES["404"]))}})
    def get(self, request, name):
        topic_set = lookup(topics_selectors.topic_set_get, name, "topic set")
        licence = request.query_params.get("licence", "")
        if not licence:
            raise ValidationError({"licence": [f"choose one of {', '.join(LICENCES)}"]})
        try:
            return archive_response(
                release_archive, topic_set.name, licence=licence,
                title=request.query_params.get("title") or None,
                authors=request.query_params.getlist("author") or None)
        except (ReleaseError, ValueError) as exc:
            raise ValidationError({"detail": [str(exc)]}) from None
