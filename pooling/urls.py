from django.urls import path

from . import views

app_name = "pooling"

urlpatterns = [
    path("", views.index, name="index"),
    path("pools/build/", views.pool_build_view, name="pool_build"),
    path("pools/<str:ref>/", views.pool_detail, name="pool_detail"),
    path("analysis/growth/", views.growth, name="growth"),
    path("analysis/rbo/", views.rbo, name="rbo"),
    path("analysis/paper/", views.paper_figures_view, name="paper_figures"),
    path("qrels/<str:name>/", views.qrels_detail, name="qrels_detail"),
]
