"""The pages under /pooling/ that read judgment sets (:mod:`judging.views.pool_pages`).
``config.urls`` mounts them with :mod:`pooling.urls` under the one ``pooling`` namespace,
at the addresses these pages have always had."""
from django.urls import path

from judging.views import pool_pages

urlpatterns = [
    path("pools/<str:ref>/", pool_pages.pool_detail, name="pool_detail"),
    path("analysis/paper/", pool_pages.paper_figures_view, name="paper_figures"),
    path("qrels/", pool_pages.qrels_list, name="qrels_list"),
    path("qrels/<str:name>/", pool_pages.qrels_detail, name="qrels_detail"),
]
