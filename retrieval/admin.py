"""Admin pages: organisers add and tune retrieval models here; collections and runs are
listed for reference (they are created by import_collection and run_retrieval)."""
from django.contrib import admin

from retrieval.models import Collection, RetrievalModel, Run


@admin.register(RetrievalModel)
class RetrievalModelAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "k1", "b", "mu", "sdm_base", "description"]
    list_filter = ["kind"]
    search_fields = ["name", "description"]


@admin.register(Collection)
class CollectionAdmin(admin.ModelAdmin):
    list_display = ["name", "format", "doc_count", "created"]
    search_fields = ["name"]
    readonly_fields = ["index_path", "doc_count", "anserini_version", "analyzer", "checksum",
                       "created"]


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["__str__", "topic_set", "collection", "model", "source", "created"]
    list_filter = ["source"]

    def has_add_permission(self, request):
        return False  # runs are started with run_retrieval or import_run

    def has_change_permission(self, request, obj=None):
        return False
