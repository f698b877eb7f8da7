from django.contrib import admin

from .models import JudgmentSet


@admin.register(JudgmentSet)
class JudgmentSetAdmin(admin.ModelAdmin):
    """Judgment sets, imported qrels among them (read: their labels are written by the
    imports and the judging pages)."""

    list_display = ("name", "source", "format", "topic_set", "labels_count", "source_file",
                    "created")
    list_filter = ("source", "format")
    search_fields = ("name",)
    readonly_fields = ("checksum", "labels_count", "created")
