from django.urls import path

from . import views

app_name = "retrieval"

urlpatterns = [
    path("", views.index, name="index"),
    path("runs/<int:run_id>/", views.run_detail, name="run_detail"),
    path("collections/<str:collection>/docs/<str:docid>/", views.document, name="document"),
]
