from django.urls import path

from . import views

app_name = "evaluation"

urlpatterns = [
    path("", views.index, name="index"),
    path("new/<str:kind>/", views.analysis_new, name="analysis_new"),
    path("analyses/<int:pk>/", views.analysis_detail, name="analysis_detail"),
    path("analyses/<int:pk>/result.json", views.analysis_json, name="analysis_json"),
    path("analyses/<int:pk>/tables/<int:n>.csv", views.analysis_table_csv, name="analysis_table_csv"),
    path("analyses/<int:pk>/figures/<str:name>.<str:fmt>", views.analysis_figure, name="analysis_figure"),
]
