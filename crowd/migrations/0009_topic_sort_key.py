"""Topics store their natural sort key, so large sets are paged by keyset in natural order;
topic sets store their numbers of topics and statements."""
from django.db import migrations, models

from common.naturalsort import natural_sort_key


def fill_sort_keys(apps, schema_editor):
    Topic = apps.get_model("crowd", "Topic")
    batch = []
    for topic in Topic.objects.only("pk", "topic_id").order_by("pk").iterator(chunk_size=5000):
        topic.sort_key = natural_sort_key(topic.topic_id)
        batch.append(topic)
        if len(batch) >= 5000:
            Topic.objects.bulk_update(batch, ["sort_key"])
            batch = []
    if batch:
        Topic.objects.bulk_update(batch, ["sort_key"])
    TopicSet = apps.get_model("crowd", "TopicSet")
    Statement = apps.get_model("crowd", "Statement")
    for ts in TopicSet.objects.all():
        TopicSet.objects.filter(pk=ts.pk).update(
            topics_count=Topic.objects.filter(topic_set=ts).count(),
            statements_count=Statement.objects.filter(topic__topic_set=ts).count())


class Migration(migrations.Migration):

    dependencies = [
        ("crowd", "0008_participant_worker_index"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="topic",
            options={"ordering": ["topic_set", "sort_key"]},
        ),
        migrations.AddField(
            model_name="topic",
            name="sort_key",
            field=models.TextField(default="", editable=False),
        ),
        migrations.AddField(
            model_name="topicset",
            name="topics_count",
            field=models.PositiveIntegerField(default=0, editable=False),
        ),
        migrations.AddField(
            model_name="topicset",
            name="statements_count",
            field=models.PositiveIntegerField(default=0, editable=False),
        ),
        migrations.RunPython(fill_sort_keys, migrations.RunPython.noop, elidable=True),
        migrations.AddConstraint(
            model_name="topic",
            constraint=models.UniqueConstraint(fields=("topic_set", "sort_key"),
                                               name="uniq_topic_sort_key"),
        ),
    ]
