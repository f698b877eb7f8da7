"""Runs left queued or running by the task messages of earlier versions get chunks for
the queries still without a ranking; the reconciler wakes them (they were never woken)."""
from django.conf import settings
from django.db import migrations


def chunks_for_unfinished_runs(apps, schema_editor):
    Run = apps.get_model("retrieval", "Run")
    RunQuery = apps.get_model("retrieval", "RunQuery")
    RunChunk = apps.get_model("retrieval", "RunChunk")
    size = max(1, settings.RETRIEVAL_CHUNK_SIZE)
    for run in Run.objects.filter(kind="retrieval", status__in=["queued", "running"]):
        if RunChunk.objects.filter(run=run).exists():
            continue
        pending = sorted(set(RunQuery.objects.filter(run=run, ranking__isnull=True)
                             .values_list("key", flat=True)))
        RunChunk.objects.bulk_create([
            RunChunk(run=run, index=i, keys=pending[start:start + size])
            for i, start in enumerate(range(0, len(pending), size))
        ])


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0005_run_chunks")]
    operations = [migrations.RunPython(chunks_for_unfinished_runs, migrations.RunPython.noop)]
