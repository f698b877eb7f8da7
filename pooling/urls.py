"""The pooling pages. Those that read judgment sets too (a pool's page, the qrels pages, the
seed paper's figures) are judging's (:mod:`judging.pool_urls`); ``config.urls`` mounts both
lists under this namespace."""
from django.urls import path

from . import views

app_name = "pooling"

urlpatterns = [
    path("", views.index, name="index"),
    path("pools/build/", views.pool_build_view, name="pool_build"),
    path("analysis/growth/", views.growth, name="growth"),
    path("analysis/rbo/", views.rbo, name="rbo"),
]
