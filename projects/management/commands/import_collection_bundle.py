"""python manage.py import_collection_bundle DIR|FILE.tar.gz [--sha256 DIGEST|FILE]"""
from django.core.management.base import BaseCommand, CommandError

from projects.release import ReleaseError
from projects.services import release_import


class Command(BaseCommand):
    help = (
        "Load a release written by export_collection (a folder or its .tar.gz) into a "
        "database that does not have its topic set. Every file's SHA-256 is checked against "
        "MANIFEST.sha256 first; all or nothing. Collections the runs name are recorded "
        "without documents (import the collection under the same name to retrieve). An "
        "archive is streamed: only the files its manifest lists are written, into a "
        "temporary folder, with caps on entries and sizes (RELEASE_MAX_MEMBERS, "
        "RELEASE_MAX_MEMBER_BYTES, RELEASE_MAX_BYTES, MAX_EXPANSION_RATIO); a folder may "
        "hold no links. Nothing is stored until every file has passed its checks."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="release folder or .tar.gz")
        parser.add_argument("--sha256", default=None, metavar="DIGEST|FILE",
                            help="the SHA-256 published beside the release (64 hex digits, "
                                 "or a sha256sum file naming it): checked before anything "
                                 "else. An archive's digest is that of the .tar.gz; a "
                                 "folder's, that of its MANIFEST.sha256")

    def handle(self, *args, path, sha256, **options):
        try:
            ts = release_import(path, sha256=sha256)
        except (ReleaseError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"topic set {ts.name!r} loaded from {path}")
