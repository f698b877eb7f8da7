"""Store a pool's packed arrays uncompressed (PostgreSQL only).

PostgreSQL compresses large ``bytea`` values by default (TOAST, pglz). For the packed
arrays of a depth-1000 pool (~7M documents) compressing took ~4 s of the ~5 s spent
storing it, for little saving; ``STORAGE EXTERNAL`` keeps them out of line, uncompressed.
"""
from django.db import migrations

COLUMNS = ("docids", "weights", "min_rank", "users", "systems")


def _storage(mode):
    def apply(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        table = schema_editor.quote_name(apps.get_model("pooling", "PoolTopic")._meta.db_table)
        for column in COLUMNS:
            schema_editor.execute(
                f"ALTER TABLE {table} ALTER COLUMN {schema_editor.quote_name(column)} "
                f"SET STORAGE {mode}")
    return apply


class Migration(migrations.Migration):

    dependencies = [
        ("pooling", "0003_pool_lease"),
    ]

    operations = [
        migrations.RunPython(_storage("EXTERNAL"), _storage("EXTENDED")),
    ]
