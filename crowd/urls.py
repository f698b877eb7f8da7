from django.urls import path, re_path

from crowd import views

app_name = "crowd"

urlpatterns = [
    # Workers: the public entry link, then pages resolved from the browser session.
    path("s/<str:slug>/", views.study_entry, name="study_entry"),
    path("s/<str:slug>/next/", views.study_next, name="study_next"),
    path("s/<str:slug>/consent/", views.study_consent, name="study_consent"),
    path("s/<str:slug>/q/<int:position>/", views.study_item, name="study_item"),
    path("s/<str:slug>/done/", views.study_done, name="study_done"),
    path("", views.index, name="index"),
    # Organisers (staff).
    path("studies/", views.study_list, name="study_list"),
    path("studies/<int:pk>/", views.study_progress, name="study_progress"),
    path("studies/<int:pk>/variants/", views.study_variants, name="study_variants"),
    re_path(r"^studies/(?P<pk>\d+)/export\.(?P<fmt>tsv|csv|json)$", views.study_export,
            name="study_export"),
]
