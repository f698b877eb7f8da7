"""Wait until the database accepts connections (with --migrated: and has every migration
applied), at most --timeout seconds; exit 1 naming the database and what is still missing
if it never does. The image runs it before every command, so no web server, worker or beat
starts against a database that is still coming up, or (workers and beat) against tables
that `migrate` has not made yet."""
import time

from django.core.management.base import BaseCommand, CommandError
from django.db import connections
from django.db.migrations.executor import MigrationExecutor
from django.db.utils import DatabaseError


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser):
        parser.add_argument("--timeout", type=float, default=60.0,
                            help="seconds to keep trying (default 60)")
        parser.add_argument("--migrated", action="store_true",
                            help="also wait until `migrate` has applied every migration")
        parser.add_argument("--database", default="default",
                            help="which of the DATABASES settings (default: default)")

    def handle(self, *args, timeout, migrated, database, **options):
        connection = connections[database]
        deadline = time.monotonic() + max(timeout, 0.0)
        tries = 0
        while True:
            tries += 1
            try:
                connection.ensure_connection()
                missing = _unapplied(connection) if migrated else 0
            except DatabaseError as exc:
                text = str(exc).strip()
                why = f"not accepting connections ({text.splitlines()[0] if text else exc!r})"
            else:
                if not missing:
                    break
                why = f"{missing} migration(s) not applied yet (`manage.py migrate`)"
            finally:
                connection.close()
            if time.monotonic() >= deadline:
                raise CommandError(f"database {_where(connection)} still {why} after "
                                   f"{timeout:g} s ({tries} tries)")
            time.sleep(min(1.0, max(deadline - time.monotonic(), 0.05)))
        if options["verbosity"] > 1 or tries > 1:
            what = "up and migrated" if migrated else "up"
            self.stdout.write(f"database {_where(connection)} is {what} (after {tries} tries)")


def _unapplied(connection) -> int:
    """How many of the project's migrations the database has not applied."""
    executor = MigrationExecutor(connection)
    return len(executor.migration_plan(executor.loader.graph.leaf_nodes()))


def _where(connection) -> str:
    """The database's name, engine and host for a message; never its password."""
    s = connection.settings_dict
    host = s.get("HOST") or "local"
    port = f":{s['PORT']}" if s.get("PORT") else ""
    return f"{s.get('NAME')!s} ({connection.vendor} at {host}{port})"
