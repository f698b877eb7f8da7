from django.contrib import admin

from .models import Pool, PoolRun, PoolTopic


class PoolRunInline(admin.TabularInline):
    """The runs a pool was built from: fixed when it was created, so read only."""

    model = PoolRun
    fields = ("run",)
    readonly_fields = ("run",)
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Pool)
class PoolAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "topic_set", "sources", "strategy", "depth", "p", "budget",
                    "status", "progress", "topics_count", "documents_count", "created")
    list_filter = ("status", "sources", "strategy")
    search_fields = ("name",)
    readonly_fields = ("status", "progress", "error", "topics_count", "documents_count",
                       "created", "finished")
    inlines = (PoolRunInline,)


@admin.register(PoolTopic)
class PoolTopicAdmin(admin.ModelAdmin):
    list_display = ("pool", "topic_id", "size")
    exclude = ("docids", "weights", "min_rank", "users", "systems")
    list_select_related = ("pool",)

