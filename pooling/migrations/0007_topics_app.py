"""Pool.topic_set point at the topics app's models. State only: the tables keep their names,
so the foreign keys in the database already point where they should."""
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('pooling', '0006_pool_runs_fill'),
        ('topics', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.AlterField(
                model_name='pool',
                name='topic_set',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='pools', to='topics.topicset'),
            ),
        ]),
    ]
