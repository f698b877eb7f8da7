"""python manage.py import_collection_bundle DIR|FILE.tar.gz"""
from django.core.management.base import BaseCommand, CommandError

from projects.release import ReleaseError
from projects.services import release_import


class Command(BaseCommand):
    help = (
        "Load a release written by export_collection (a folder or its .tar.gz) into a "
        "database that does not have its topic set. Every file's SHA-256 is checked against "
        "MANIFEST.sha256 first; all or nothing. Collections the runs name are recorded "
        "without documents (import the collection under the same name to retrieve)."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="release folder or .tar.gz")

    def handle(self, *args, path, **options):
        try:
            ts = release_import(path)
        except (ReleaseError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"topic set {ts.name!r} loaded from {path}")
