"""Imported qrels live in the judging app's judgment sets (moved there by
judging 0011_qrels_into_judgment_sets): pooling's own tables go."""
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("pooling", "0007_topics_app"),
        ("judging", "0011_qrels_into_judgment_sets"),
    ]

    operations = [
        migrations.DeleteModel(name="QrelsJudgment"),
        migrations.DeleteModel(name="Qrels"),
    ]
