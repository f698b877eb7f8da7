from django.contrib import admin

from crowd.models import Participant, Study, StudyItem


class StudyItemInline(admin.TabularInline):
    model = StudyItem
    extra = 0
    fields = ["kind", "statement", "prompt", "expected"]
    raw_id_fields = ["statement"]


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ["name", "topic_set", "responses_per_statement", "statements_per_worker", "is_open", "created"]
    list_filter = ["is_open"]
    readonly_fields = ["slug", "created"]
    inlines = [StudyItemInline]


@admin.register(Participant)
class ParticipantAdmin(admin.ModelAdmin):
    list_display = ["worker_id", "platform", "study", "status", "arrived", "finished"]
    list_filter = ["study", "status", "platform"]
    search_fields = ["worker_id"]
    readonly_fields = ["session_token", "seed"]
