"""System checks for retrieval (ids are stable).

The index check reads the database, so it is a database check: Django gives it the
databases to read only for ``manage.py check --database <alias>`` (and ``migrate``);
every other command runs it with none, and it reads nothing.
"""
from pathlib import Path

from django.core.checks import Error, Tags, register


@register(Tags.database)
def index_paths_exist(app_configs, databases=None, **kwargs):
    from django.db import DatabaseError

    from .models import Collection

    errors = []
    collections = []
    for alias in databases or ():  # None unless asked for: ``check --database <alias>``
        try:
            collections += Collection.objects.using(alias).filter(status="ready").only(
                "name", "index_path")
        except DatabaseError:
            continue  # tables not created yet (before migrate)
    for c in collections:
        if not Path(c.index_path).is_dir():
            errors.append(
                Error(
                    f"index path does not exist: {c.index_path}",
                    hint=f"re-import collection {c.name!r} with import_collection",
                    obj=c.name,
                    id="retrieval.E001",
                )
            )
    return errors
