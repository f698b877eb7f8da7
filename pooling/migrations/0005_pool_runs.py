"""Pools record the runs they were built from (filled for existing pools by 0006)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('pooling', '0004_pooltopic_uncompressed_arrays'),
        ('retrieval', '0006_chunks_for_unfinished_runs'),
    ]

    operations = [
        migrations.CreateModel(
            name='PoolRun',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('pool', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='pool_runs', to='pooling.pool')),
                ('run', models.ForeignKey(on_delete=django.db.models.deletion.RESTRICT, related_name='pool_runs', to='retrieval.run')),
            ],
            options={
                'ordering': ['pool', 'run'],
            },
        ),
        migrations.AddField(
            model_name='pool',
            name='runs',
            field=models.ManyToManyField(blank=True, related_name='pools', through='pooling.PoolRun', to='retrieval.run'),
        ),
        migrations.AddConstraint(
            model_name='poolrun',
            constraint=models.UniqueConstraint(fields=('pool', 'run'), name='uniq_pool_run'),
        ),
    ]
