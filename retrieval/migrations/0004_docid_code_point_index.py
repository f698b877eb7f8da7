"""An index that lists docids in code point order with their ids.

Pools and analyses break ties by docid string in code point order (as Python sorts str)
and ask the database for a pool's ids in that order (``retrieval.selectors.docid_order``).
PostgreSQL's unique index on ``docid`` follows the database collation, which is often
linguistic, so a pool of 2M documents paid a 2M-string sort per build; this index
answers the same query with an index-only scan. SQLite's default collation already is
code point order, and its unique index serves there; only the id is added.

Kept out of the model's Meta because "C" is a PostgreSQL collation name.
"""
from django.db import migrations

INDEX = "retrieval_docid_code_point"


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f'CREATE INDEX IF NOT EXISTS {INDEX} ON retrieval_docid ((docid COLLATE "C"), id)')
    elif schema_editor.connection.vendor == "sqlite":
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {INDEX} ON retrieval_docid (docid, id)")


def drop(apps, schema_editor):
    if schema_editor.connection.vendor in ("postgresql", "sqlite"):
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    dependencies = [("retrieval", "0003_run_progress")]
    operations = [migrations.RunPython(create, drop)]
