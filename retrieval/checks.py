"""System checks for retrieval (ids are stable)."""
from pathlib import Path

from django.core.checks import Error, register


@register()
def index_paths_exist(app_configs, **kwargs):
    from django.db import DatabaseError

    from .models import Collection

    errors = []
    try:
        collections = list(Collection.objects.filter(status="ready").only("name", "index_path"))
    except DatabaseError:
        return errors  # tables not created yet (before migrate)
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
