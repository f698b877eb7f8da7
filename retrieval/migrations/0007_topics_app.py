"""Run.topic_set and RunQuery.topic point at the topics app's models. State only: the tables keep their names,
so the foreign keys in the database already point where they should."""
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('retrieval', '0006_chunks_for_unfinished_runs'),
        ('topics', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.AlterField(
                model_name='run',
                name='topic_set',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='runs', to='topics.topicset'),
            ),
            migrations.AlterField(
                model_name='runquery',
                name='topic',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to='topics.topic'),
            ),
        ]),
    ]
