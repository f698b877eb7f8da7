"""Topic sets, topics, statements, intents and query variants now belong to the topics app
(topics 0001): crowd's own foreign keys point there and the models leave crowd's state.
State only: the tables (crowd_topicset ...) and their rows stay as they are. Runs after the
other apps' foreign keys moved too, so nothing points at crowd's copies when they go."""
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('judging', '0008_topics_app'),
        ('pooling', '0007_topics_app'),
        ('retrieval', '0007_topics_app'),
        ('crowd', '0009_topic_sort_key'),
        ('topics', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.RemoveField(
                model_name='queryvariant',
                name='topic',
            ),
            migrations.AlterField(
                model_name='response',
                name='variant',
                field=models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='response', to='topics.queryvariant'),
            ),
            migrations.RemoveField(
                model_name='statement',
                name='topic',
            ),
            migrations.AlterField(
                model_name='studyitem',
                name='statement',
                field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='study_items', to='topics.statement'),
            ),
            migrations.RemoveField(
                model_name='topic',
                name='topic_set',
            ),
            migrations.AlterField(
                model_name='study',
                name='topic_set',
                field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='studies', to='topics.topicset'),
            ),
            migrations.DeleteModel(
                name='Intent',
            ),
            migrations.DeleteModel(
                name='QueryVariant',
            ),
            migrations.DeleteModel(
                name='Statement',
            ),
            migrations.DeleteModel(
                name='Topic',
            ),
            migrations.DeleteModel(
                name='TopicSet',
            ),
        ]),
    ]
