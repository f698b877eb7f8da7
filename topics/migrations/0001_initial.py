"""The topic models, moved here from the crowd app with their tables (crowd_topicset ...).
State only: the tables were created by crowd's migrations and keep every row; their content
types are relabelled so permissions granted on them survive."""
import django.db.models.deletion
from django.db import migrations, models


MODELS = ["topicset", "topic", "statement", "intent", "queryvariant"]


def _relabel(apps, old: str, new: str) -> None:
    """Move the content types (and so the permissions granted on them) from ``old`` to
    ``new``; a type already present under ``new`` is kept and the old one left alone."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        if not ContentType.objects.filter(app_label=new, model=model).exists():
            ContentType.objects.filter(app_label=old, model=model).update(app_label=new)


def forwards(apps, schema_editor):
    _relabel(apps, "crowd", "topics")


def backwards(apps, schema_editor):
    _relabel(apps, "topics", "crowd")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('crowd', '0009_topic_sort_key'),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.CreateModel(
                name='TopicSet',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('name', models.CharField(max_length=100, unique=True)),
                    ('created', models.DateTimeField(auto_now_add=True)),
                    ('topics_count', models.PositiveIntegerField(default=0, editable=False)),
                    ('statements_count', models.PositiveIntegerField(default=0, editable=False)),
                ],
                options={
                    'db_table': 'crowd_topicset',
                    'ordering': ['name'],
                },
            ),
            migrations.CreateModel(
                name='Topic',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('topic_id', models.CharField(max_length=100)),
                    ('sort_key', models.TextField(default='', editable=False)),
                    ('title', models.TextField(blank=True, default='')),
                    ('description', models.TextField(blank=True, default='')),
                    ('narrative', models.TextField(blank=True, default='')),
                    ('kind', models.CharField(blank=True, default='', max_length=20)),
                    ('topic_set', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='topics', to='topics.topicset')),
                ],
                options={
                    'db_table': 'crowd_topic',
                    'ordering': ['topic_set', 'sort_key'],
                },
            ),
            migrations.CreateModel(
                name='Statement',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('position', models.PositiveIntegerField(default=0)),
                    ('text', models.TextField()),
                    ('topic', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='statements', to='topics.topic')),
                ],
                options={
                    'db_table': 'crowd_statement',
                    'ordering': ['topic', 'position'],
                    'constraints': [models.UniqueConstraint(fields=('topic', 'position'), name='uniq_statement_position')],
                },
            ),
            migrations.CreateModel(
                name='QueryVariant',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('variant_id', models.CharField(blank=True, default='', max_length=100)),
                    ('raw', models.TextField()),
                    ('normalised', models.TextField()),
                    ('uncorrected', models.TextField(blank=True, default='')),
                    ('worker_id', models.CharField(blank=True, default='', max_length=200)),
                    ('count', models.PositiveIntegerField(default=1)),
                    ('estimate', models.CharField(blank=True, default='', max_length=50)),
                    ('source', models.CharField(choices=[('crowd', 'collected here'), ('import', 'imported')], default='import', max_length=10)),
                    ('created', models.DateTimeField(auto_now_add=True)),
                    ('topic', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='variants', to='topics.topic')),
                ],
                options={
                    'db_table': 'crowd_queryvariant',
                    'ordering': ['topic', 'id'],
                    'indexes': [models.Index(fields=['topic', 'normalised'], name='variant_topic_norm')],
                },
            ),
            migrations.CreateModel(
                name='Intent',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('intent_id', models.CharField(max_length=100)),
                    ('description', models.TextField(blank=True, default='')),
                    ('kind', models.CharField(blank=True, default='', max_length=20)),
                    ('topic', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='intents', to='topics.topic')),
                ],
                options={
                    'db_table': 'crowd_intent',
                    'ordering': ['topic', 'intent_id'],
                    'constraints': [models.UniqueConstraint(fields=('topic', 'intent_id'), name='uniq_intent_in_topic')],
                },
            ),
            migrations.AddConstraint(
                model_name='topic',
                constraint=models.UniqueConstraint(fields=('topic_set', 'topic_id'), name='uniq_topic_in_set'),
            ),
            migrations.AddConstraint(
                model_name='topic',
                constraint=models.UniqueConstraint(fields=('topic_set', 'sort_key'), name='uniq_topic_sort_key'),
            ),
        ]),
        migrations.RunPython(forwards, backwards),
    ]
