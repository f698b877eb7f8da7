"""python manage.py import_collection NAME PATH --format {jsonl,trec,smart}
python manage.py import_collection NAME --ir-datasets ID"""
import json
import tempfile
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from common import irdatasets
from common.fileio import InputError

from retrieval.anserini import AnseriniError
from retrieval.collections_io import FORMATS
from retrieval.services import ImportInterrupted, RetrievalError, collection_import


class Command(BaseCommand):
    help = (
        "Read a document collection (jsonl: id+contents or id+title+text; trec: TREC SGML "
        "<DOC><DOCNO>; smart: .I/.T/.W/.A records), build its Lucene index with positions, "
        "document vectors and raw text, and register its docids. All or nothing. .gz files "
        "are read directly. --ir-datasets ID reads the documents of an ir_datasets dataset "
        "from its local cache instead of a file (their text fields joined, title first)."
    )

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("path", nargs="?")
        parser.add_argument("--format", choices=FORMATS, dest="fmt",
                            help="the file's format (needed with PATH)")
        parser.add_argument("--ir-datasets", metavar="ID", dest="irds",
                            help="an ir_datasets dataset id (e.g. cranfield) instead of PATH")
        parser.add_argument("--encoding", default="utf-8",
                            help="text encoding of the file (default utf-8; e.g. latin-1)")
        parser.add_argument("--skip-empty", action="store_true", dest="skip_empty",
                            help="leave out documents with no text (Anserini cannot index "
                            "them) and list them, instead of refusing the file")

    def handle(self, *args, name, path, fmt, encoding, skip_empty, irds, **options):
        verbose = options.get("verbosity", 1) >= 1
        say = (lambda m: self.stdout.write(m)) if verbose else None
        if bool(path) == bool(irds):
            raise CommandError("give a collection file (PATH --format F) or --ir-datasets ID")
        if path and not fmt:
            raise CommandError("--format is needed with a collection file")
        try:
            if irds:
                with tempfile.TemporaryDirectory(prefix="irds-docs-") as tmp:
                    jsonl = Path(tmp) / f"{irds.replace('/', '_')}.jsonl"
                    with open(jsonl, "w", encoding="utf-8") as fh:
                        for docid, contents in irdatasets.documents(irds):
                            fh.write(json.dumps({"id": docid, "contents": contents}) + "\n")
                    c = collection_import(name, jsonl, "jsonl", progress=say,
                                          skip_empty=skip_empty)
            else:
                c = collection_import(name, path, fmt, progress=say, encoding=encoding,
                                      skip_empty=skip_empty)
        except (InputError, RetrievalError, AnseriniError, ImportInterrupted,
                irdatasets.IrDatasetsError) as exc:
            raise CommandError(str(exc)) from None
        except KeyboardInterrupt:
            raise CommandError("interrupted; nothing was imported") from None
        self.stdout.write(
            f"{c.name}: {c.doc_count} documents, Anserini {c.anserini_version}, "
            f"sha256 {c.checksum[:16]}..., index {c.index_path}"
        )
