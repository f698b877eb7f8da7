"""python manage.py export_collection --topic-set T --licence SPDX --out DIR|FILE.tar.gz"""
from django.core.management.base import BaseCommand, CommandError

from projects.release import LICENCES, ReleaseError
from projects.services import release_digest, release_export


class Command(BaseCommand):
    help = (
        "Export a topic set and everything built on it as a release: topics with statements "
        "and intents, query variants (worker ids pseudonymised), user and system runs in "
        "TREC format, pools with the runs that built them, raw labels per assessor and "
        "aggregated qrels, agreement and intent-property figures, a datasheet README.md, "
        "CITATION.cff, LICENSE.md and MANIFEST.sha256. --out names a new (or empty) folder, "
        "or a file ending in .tar.gz. The same data give the same bytes. Licences: "
        + ", ".join(LICENCES) + "."
    )

    def add_arguments(self, parser):
        parser.add_argument("--topic-set", required=True, dest="topic_set")
        parser.add_argument("--out", required=True, help="a folder, or FILE.tar.gz")
        parser.add_argument("--licence", "--license", required=True, dest="licence",
                            help="SPDX id of the release's licence: " + ", ".join(LICENCES))
        parser.add_argument("--title", default=None,
                            help="title for the datasheet and CITATION.cff (default: the "
                                 "topic set's name)")
        parser.add_argument("--author", action="append", dest="authors", default=None,
                            help="an author for CITATION.cff (repeat for several)")

    def handle(self, *args, topic_set, out, licence, title, authors, **options):
        try:
            path = release_export(topic_set, out, licence=licence, title=title,
                                  authors=authors)
        except (ReleaseError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        except OSError as exc:
            raise CommandError(f"cannot write {out}: {exc.strerror or exc}") from None
        self.stdout.write(f"release of topic set {topic_set!r} written to {path}")
        digest = release_digest(path)
        self.stdout.write(f"SHA-256 {digest} (publish it beside the release; "
                          f"import_collection_bundle --sha256 {digest} checks it)")
