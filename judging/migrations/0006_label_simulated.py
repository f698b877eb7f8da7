"""Labels say whether the demo's simulated assessor gave them (as crowd participants say
whether they are simulated workers)."""
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('judging', '0005_queue_slot_statistics'),
    ]

    operations = [
        migrations.AddField(
            model_name='label',
            name='simulated',
            field=models.BooleanField(db_default=False, default=False, help_text="given by the demo's simulated assessor, not a person"),
        ),
    ]
