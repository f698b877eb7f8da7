"""The order once offered as ``bandit-ns`` (read as Losada et al.'s MM-NS but never checked
against the paper) is this project's own discounted bandit: renamed ``bandit-discounted``
in the stored tasks too. Hedge joins the orders a task may use."""
from django.db import migrations, models


def rename(apps, schema_editor):
    task = apps.get_model("judging", "JudgingTask")
    task.objects.filter(order="bandit-ns").update(order="bandit-discounted")


def rename_back(apps, schema_editor):
    task = apps.get_model("judging", "JudgingTask")
    task.objects.filter(order="bandit-discounted").update(order="bandit-ns")


class Migration(migrations.Migration):

    dependencies = [
        ('judging', '0008_topics_app'),
    ]

    operations = [
        migrations.AlterField(
            model_name='judgingtask',
            name='order',
            field=models.CharField(choices=[('pool', "the pool's order"), ('mtf', 'move-to-front over the contributing rankings'), ('bandit', 'Bayesian bandit (maximum mean) over the contributing rankings'), ('bandit-discounted', "Bayesian bandit with discounted evidence (this project's variant) over the contributing rankings"), ('hedge', 'Hedge (Aslam, Pavlu & Savell 2003) over the contributing rankings')], default='pool', max_length=20),
        ),
        migrations.RunPython(rename, rename_back),
    ]
