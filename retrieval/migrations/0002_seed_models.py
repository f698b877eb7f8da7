"""Ready-made retrieval models: bm25 (Anserini 0.9/0.4), bm25-okapi (1.2/0.75), qld, sdm."""
from django.db import migrations

from retrieval.defaults import READY_MADE_MODELS as SEED


def seed(apps, schema_editor):
    RetrievalModel = apps.get_model("retrieval", "RetrievalModel")
    for row in SEED:
        RetrievalModel.objects.update_or_create(name=row["name"], defaults=row)


def unseed(apps, schema_editor):
    RetrievalModel = apps.get_model("retrieval", "RetrievalModel")
    RetrievalModel.objects.filter(name__in=[r["name"] for r in SEED]).delete()


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0001_initial")]
    operations = [migrations.RunPython(seed, unseed)]
