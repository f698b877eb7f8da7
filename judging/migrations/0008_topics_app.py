"""JudgmentSet.topic_set point at the topics app's models. State only: the tables keep their names,
so the foreign keys in the database already point where they should."""
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('judging', '0007_task_stop_rule'),
        ('topics', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.AlterField(
                model_name='judgmentset',
                name='topic_set',
                field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='judgment_sets', to='topics.topicset'),
            ),
        ]),
    ]
