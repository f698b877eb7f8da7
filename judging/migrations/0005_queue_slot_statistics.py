"""PostgreSQL: fresh planner statistics for the slots table, a queue whose ``assessor``
column goes from all-empty to millions of values.

With the default thresholds (re-analyse after 10% of the rows change: 300,000 on a
1,000,000-item task with K = 3) the planner keeps believing that an assessor holds one
slot and reads the assessor's items through the (item, assessor) index from end to end,
a cost that grows with every judgment of the task; re-analysing after 5,000 + 0.2% of
the rows change (about 11,000 at 3,000,000 slots, minutes of judging) keeps the claim on
the (task, assessor) index."""
from django.db import migrations



def _slots(apps, schema_editor) -> str:
    table = apps.get_model("judging", "JudgingSlot")._meta.db_table
    return schema_editor.quote_name(table)


def tune(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"ALTER TABLE {_slots(apps, schema_editor)} SET "
            "(autovacuum_analyze_scale_factor = 0.002, autovacuum_analyze_threshold = 5000)")


def untune(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"ALTER TABLE {_slots(apps, schema_editor)} RESET "
            "(autovacuum_analyze_scale_factor, autovacuum_analyze_threshold)")


class Migration(migrations.Migration):

    dependencies = [
        ("judging", "0004_queue_progress"),
    ]

    operations = [
        migrations.RunPython(tune, untune),
    ]
