"""Judging progress without scanning slots: a per-topic count of done slots (kept by
the services; filled here from the slots) and an index of each assessor's labels."""
from django.db import migrations, models
from django.db.models import Count


def count_done(apps, schema_editor):
    TaskTopic = apps.get_model("judging", "TaskTopic")
    JudgingSlot = apps.get_model("judging", "JudgingSlot")
    rows = (JudgingSlot.objects.filter(state="done").values("task_id", "topic_id")
            .annotate(n=Count("id")).order_by())
    for r in rows:
        TaskTopic.objects.filter(task_id=r["task_id"], topic_id=r["topic_id"]).update(
            slots_done=r["n"])


class Migration(migrations.Migration):

    dependencies = [
        ("judging", "0003_task_order_bandit_ns"),
    ]

    operations = [
        migrations.AddField(
            model_name="tasktopic",
            name="slots_done",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunPython(count_done, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="label",
            index=models.Index(fields=["judgment_set", "assessor", "id"],
                               name="label_set_assessor"),
        ),
    ]
