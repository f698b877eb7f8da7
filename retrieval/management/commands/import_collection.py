"""python manage.py import_collection NAME PATH --format {jsonl,trec,smart}"""
from django.core.management.base import BaseCommand, CommandError

from retrieval.anserini import AnseriniError
from retrieval.collections_io import FORMATS, CollectionFormatError
from retrieval.services import ImportInterrupted, RetrievalError, collection_import


class Command(BaseCommand):
    help = (
        "Read a document collection (jsonl: id+contents or id+title+text; trec: TREC SGML "
        "<DOC><DOCNO>; smart: .I/.T/.W/.A records), build its Lucene index with positions, "
        "document vectors and raw text, and register its docids. All or nothing. .gz files "
        "are read directly."
    )

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("path")
        parser.add_argument("--format", required=True, choices=FORMATS, dest="fmt")
        parser.add_argument("--encoding", default="utf-8",
                            help="text encoding of the file (default utf-8; e.g. latin-1)")
        parser.add_argument("--skip-empty", action="store_true", dest="skip_empty",
                            help="leave out documents with no text (Anserini cannot index "
                            "them) and list them, instead of refusing the file")

    def handle(self, *args, name, path, fmt, encoding, skip_empty, **options):
        verbose = options.get("verbosity", 1) >= 1
        say = (lambda m: self.stdout.write(m)) if verbose else None
        try:
            c = collection_import(name, path, fmt, progress=say, encoding=encoding,
                                  skip_empty=skip_empty)
        except (CollectionFormatError, RetrievalError, AnseriniError, ImportInterrupted) as exc:
            raise CommandError(str(exc)) from None
        except KeyboardInterrupt:
            raise CommandError("interrupted; nothing was imported") from None
        self.stdout.write(
            f"{c.name}: {c.doc_count} documents, Anserini {c.anserini_version}, "
            f"sha256 {c.checksum[:16]}..., index {c.index_path}"
        )
