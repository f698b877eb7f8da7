"""python manage.py import_collection NAME PATH --format {jsonl,trec,smart}"""
from django.core.management.base import BaseCommand, CommandError

from retrieval.anserini import AnseriniError
from retrieval.collections_io import FORMATS, CollectionFormatError
from retrieval.services import RetrievalError, collection_import


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

    def handle(self, *args, name, path, fmt, **options):
        verbose = options.get("verbosity", 1) >= 1
        say = (lambda m: self.stdout.write(m)) if verbose else None
        try:
            c = collection_import(name, path, fmt, progress=say)
        except (CollectionFormatError, RetrievalError, AnseriniError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"{c.name}: {c.doc_count} documents, Anserini {c.anserini_version}, "
            f"sha256 {c.checksum[:16]}..., index {c.index_path}"
        )
