from django.contrib import admin

from .models import Pool, PoolTopic, Qrels


@admin.register(Pool)
class PoolAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "topic_set", "sources", "strategy", "depth", "p", "budget",
                    "status", "progress", "topics_count", "documents_count", "created")
    list_filter = ("status", "sources", "strategy")
    search_fields = ("name",)
    readonly_fields = ("status", "progress", "error", "topics_count", "documents_count",
                       "created", "finished")


@admin.register(PoolTopic)
class PoolTopicAdmin(admin.ModelAdmin):
    list_display = ("pool", "topic_id", "size")
    exclude = ("docids", "weights", "min_rank", "users", "systems")
    list_select_related = ("pool",)


@admin.register(Qrels)
class QrelsAdmin(admin.ModelAdmin):
    list_display = ("name", "format", "judgments_count", "source_file", "created")
    readonly_fields = ("checksum", "judgments_count", "created")
