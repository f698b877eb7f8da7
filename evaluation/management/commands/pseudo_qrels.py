"""Diversity pseudo-qrels from subtopic strings matched in the pooled documents' text."""
import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from common import fileio
from common.fileio import InputError, atomic_output
from common.manifest_command import ManifestMixin
from evaluation import pseudoqrels


def _tsv(path: str, columns: int, what: str) -> list[list[str]]:
    rows = []
    for lineno, line in fileio.open_lines(fileio.require_file(path)):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != columns or not all(x.strip() for x in parts):
            raise InputError(path, lineno, f"expected {columns} tab-separated fields ({what})")
        rows.append([x.strip() for x in parts])
    return rows


def _documents(path: str) -> dict[str, str]:
    docs = {}
    lines = fileio.open_lines(fileio.require_file(path), max_line_bytes=fileio.MAX_FILE_BYTES)
    for lineno, line in lines:  # one document per line, however long
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(path, lineno, f"not JSON ({exc.msg})") from None
        if not isinstance(obj, dict) or "id" not in obj:
            raise InputError(path, lineno, "expected an object with id and contents (or title, "
                                           "text)")
        text = obj.get("contents") if "contents" in obj else " ".join(
            str(obj.get(k, "")) for k in ("title", "text"))
        docs[str(obj["id"])] = str(text)
    return docs


class Command(ManifestMixin, BaseCommand):
    help = ("Pseudo-qrels (Sakai, Dou & Clarke 2013): each subtopic string without its topic "
            "string is counted in every pooled document; level = max(0, floor(ln(count) + 1)). "
            "Writes diversity qrels (topic intent docid level) to --out, and/or stores them as "
            "a judgment set (--store NAME) that evaluate and rank_correlation read with "
            "--judgments. From files (--pool, --docs, --topics, --subtopics) or from a stored "
            "pool (--stored-pool): its documents, its collection's stored text, and the topic "
            "set's titles and intent descriptions unless --topics/--subtopics give files.")

    def add_arguments(self, parser):
        parser.add_argument("--topics", help="TSV: topic, topic string (with --stored-pool: "
                                             "default the topic titles)")
        parser.add_argument("--subtopics", help="TSV: topic, intent, subtopic string (with "
                                                "--stored-pool: default the intent descriptions)")
        parser.add_argument("--pool",
                            help="pooled documents: lines whose first two fields are topic docid "
                                 "(export_pool's txt format)")
        parser.add_argument("--docs", help="JSON lines with id and contents (or title, text)")
        parser.add_argument("--stored-pool", metavar="POOL",
                            help="a stored pool (id or name) instead of --pool and --docs")
        parser.add_argument("--collection", metavar="NAME",
                            help="with --stored-pool: the collection whose stored text is read "
                                 "(default the pool's own)")
        parser.add_argument("--store", metavar="NAME",
                            help="store the pseudo-qrels as a judgment set NAME (assessor "
                                 "'pseudo') of the pool's topic set")
        parser.add_argument("--probabilities", help="topic intent probability: with --match-intents, "
                                                    "keep the most probable intents")
        parser.add_argument("--match-intents",
                            help="diversity qrels whose per-topic count of intents with a relevant "
                                 "document the kept intents must match")
        parser.add_argument("--out", help="the qrels file to write (needed without --store)")

    def handle(self, *args, **o):
        try:
            stored = self._stored(o) if o["stored_pool"] else None
            if stored is None:
                for option in ("topics", "subtopics", "pool", "docs", "out"):
                    if not o[option]:
                        raise ValueError(f"--{option} is needed (or --stored-pool, with --store "
                                         "or --out)")
                if o["store"]:
                    raise ValueError("--store needs --stored-pool (the judgment set belongs "
                                     "to the pool's topic set)")
            elif not (o["out"] or o["store"]):
                raise ValueError("give --out FILE, --store NAME or both")
            if o["topics"]:
                topics = {t: s for t, s in _tsv(o["topics"], 2, "topic, topic string")}
            else:
                topics = stored["topics"]
            subtopics: dict = {}
            if o["subtopics"]:
                for t, i, s in _tsv(o["subtopics"], 3, "topic, intent, subtopic string"):
                    if i in subtopics.setdefault(t, {}):
                        raise ValueError(f"{o['subtopics']}: topic {t} intent {i} appears twice")
                    subtopics[t][i] = s
            else:
                subtopics = stored["subtopics"]
            if bool(o["probabilities"]) != bool(o["match_intents"]):
                raise ValueError("--probabilities and --match-intents go together")
            if o["probabilities"]:
                from evaluation.measures import read_intent_probabilities, read_qrels

                counts = {t: sum(1 for docs in intents.values() if any(g > 0 for g in docs.values()))
                          for t, intents in read_qrels(o["match_intents"], "diversity").judgments.items()}
                keep = pseudoqrels.truncate_intents(read_intent_probabilities(o["probabilities"]), counts)
                subtopics = {t: {i: s for i, s in d.items() if i in keep.get(t, [])}
                             for t, d in subtopics.items() if t in keep}
            if stored is not None:
                pool, text = stored["pool"], stored["text"]
            else:
                pool = _pool_file(o["pool"])
                docs = _documents(o["docs"])

                def text(docid: str) -> str:
                    if docid not in docs:
                        raise ValueError(f"{o['docs']}: no document {docid} (pooled)")
                    return docs[docid]

            qrels, notes = pseudoqrels.pseudo_qrels(topics, subtopics, pool, text)
            lines = "".join(f"{q.topic} {q.intent} {q.docid} {q.level}\n" for q in qrels)
            if o["store"]:
                jset = self._store(o["store"], lines, stored["topic_set"])
        except (ValueError, OSError) as exc:
            raise CommandError(str(exc)) from None
        relevant = sum(1 for q in qrels if q.level > 0)
        if o["out"]:
            with atomic_output(o["out"]) as fh:
                fh.write(lines)
        for note in notes:
            self.stderr.write(note)
        where = " and ".join(([f"to {o['out']}"] if o["out"] else [])
                             + ([f"as judgment set {jset.name}"] if o["store"] else []))
        self.stdout.write(f"wrote {len(qrels)} pseudo-judgments ({relevant} with a level above 0) "
                          f"{where}")

    @staticmethod
    def _stored(o) -> dict:
        """The pool's documents by topic, a reader of its collection's stored text, and
        the topic set's titles and intent descriptions."""
        from judging.doctext import document_text
        from pooling.selectors import pool_docids_by_topic, pool_get
        from retrieval.selectors import collection_get, document_raw
        from topics.selectors import topic_list

        pool_row = pool_get(o["stored_pool"])
        if pool_row.status != pool_row.STATUS_DONE:
            raise ValueError(f"pool {pool_row.label} is {pool_row.status}, not done")
        if o["collection"]:
            collection = collection_get(o["collection"])
        elif pool_row.collection is None:
            raise ValueError(f"pool {pool_row.label} has no collection: name the one whose "
                             "text to read with --collection")
        else:
            collection = pool_row.collection
        topic_set = pool_row.topic_set.name
        topics, subtopics = {}, {}
        for t in topic_list(topic_set):
            topics[t.topic_id] = t.title
            subtopics[t.topic_id] = {i.intent_id: i.description for i in t.intents.all()
                                     if i.description}

        def text(docid: str) -> str:
            raw = document_raw(collection, docid)
            if raw is None:
                raise ValueError(f"collection {collection.name}: no stored text for pooled "
                                 f"document {docid}")
            doc = document_text(raw)
            return " ".join([doc.title, *doc.paragraphs])

        return {"pool": pool_docids_by_topic(pool_row), "text": text, "topics": topics,
                "subtopics": subtopics, "topic_set": topic_set}

    @staticmethod
    def _store(name: str, lines: str, topic_set: str):
        import tempfile

        from judging.services import judgments_import

        with tempfile.TemporaryDirectory(prefix="pseudo-qrels-") as tmp:
            path = Path(tmp) / f"{name}.qrels"
            path.write_text(lines, encoding="utf-8")
            return judgments_import(path, format="diversity", name=name,
                                    topic_set_name=topic_set, assessor="pseudo")


def _pool_file(path: str) -> dict[str, list[str]]:
    pool: dict = {}
    for lineno, line in fileio.open_lines(fileio.require_file(path)):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        if len(parts) < 2:
            raise InputError(path, lineno, "expected topic docid")
        pool.setdefault(parts[0], []).append(parts[1])
    return pool
