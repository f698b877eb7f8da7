from django.urls import path, re_path

from projects import views as org, views_release

app_name = "projects"

# Mounted under /crowd/ (config.urls), at the addresses these pages have always had.
urlpatterns = [
    # Organiser workflow in the browser (staff): project page, uploads, study, retrieval,
    # judging tasks and exports through the same services as the management commands.
    path("topic-sets/<int:pk>/project/", org.project, name="organiser_project"),
    path("topic-sets/<int:pk>/release/", views_release.release_download,
         name="organiser_release"),
    path("topic-sets/<int:pk>/pools/", org.pool_build, name="organiser_pool_build"),
    path("organiser/topics/", org.topics_upload, name="organiser_topics_upload"),
    path("organiser/variants/", org.variants_upload, name="organiser_variants_upload"),
    path("organiser/runs/", org.run_upload, name="organiser_run_upload"),
    path("organiser/qrels/", org.qrels_upload, name="organiser_qrels_upload"),
    path("organiser/uploads/<int:pk>/", org.upload_status, name="organiser_upload_status"),
    path("organiser/collections/", org.collection_upload, name="organiser_collection_upload"),
    path("organiser/studies/", org.study_new, name="organiser_study_new"),
    path("organiser/studies/<int:pk>/links/", org.study_links, name="organiser_study_links"),
    path("organiser/retrieval/", org.retrieval_launch, name="organiser_retrieval_launch"),
    path("organiser/judging-tasks/", org.judging_task_new, name="organiser_judging_task_new"),
    path("organiser/runs/<int:run_id>/export.txt", org.run_export, name="organiser_run_export"),
    path("organiser/pools/<int:ref>/export.<str:fmt>", org.pool_export, name="organiser_pool_export"),
    re_path(r"^topic-sets/(?P<pk>\d+)/variants\.(?P<fmt>tsv|csv|json|queries)$",
            org.variants_export, name="organiser_variants_export"),
]
