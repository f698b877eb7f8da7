"""Record, for every existing pool, the runs its build used.

Before pools recorded their runs, a build (and every later replay of its rankings) read
the newest finished variants run of the pool's model and collection and every finished
system run of its topic set. This fills each pool with those runs as they stood when it
was built: runs that finished after the pool did are left out. A pool of user variants
without a model (its build found no rankings) gets no user run.
"""
from django.db import migrations
from django.db.models import Q


def _runs_at_build(Run, pool) -> list[int]:
    runs = Run.objects.filter(topic_set_id=pool.topic_set_id, status="done")
    if pool.finished is not None:
        runs = runs.filter(Q(finished__lte=pool.finished)
                           | Q(finished__isnull=True, created__lte=pool.finished))
    ids = []
    if pool.sources in ("users", "combined") and pool.model_id is not None:
        user = runs.filter(kind="retrieval", source="variants", model_id=pool.model_id)
        user = (user.filter(collection_id=pool.collection_id) if pool.collection_id
                else user.filter(collection__isnull=True))
        newest = user.order_by("-created", "-id").values_list("id", flat=True).first()
        if newest is not None:
            ids.append(newest)
    if pool.sources in ("systems", "combined"):
        ids += list(runs.filter(kind="system").values_list("id", flat=True))
    return sorted(ids)


def fill(apps, schema_editor):
    Pool = apps.get_model("pooling", "Pool")
    PoolRun = apps.get_model("pooling", "PoolRun")
    Run = apps.get_model("retrieval", "Run")
    for pool in Pool.objects.filter(pool_runs__isnull=True).iterator():
        PoolRun.objects.bulk_create(
            [PoolRun(pool_id=pool.id, run_id=run_id) for run_id in _runs_at_build(Run, pool)])


class Migration(migrations.Migration):

    dependencies = [
        ("pooling", "0005_pool_runs"),
        ("retrieval", "0006_chunks_for_unfinished_runs"),
    ]

    operations = [migrations.RunPython(fill, migrations.RunPython.noop)]
