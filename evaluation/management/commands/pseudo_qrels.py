"""Diversity pseudo-qrels from subtopic strings matched in the pooled documents' text."""
import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from common.manifest_command import ManifestMixin
from evaluation import pseudoqrels


def _tsv(path: str, columns: int, what: str) -> list[list[str]]:
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{path}: no such file")
    rows = []
    with open(p, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.rstrip("\n").split("\t")
            if len(parts) != columns or not all(x.strip() for x in parts):
                raise ValueError(f"{path}, line {lineno}: expected {columns} tab-separated fields ({what})")
            rows.append([x.strip() for x in parts])
    return rows


def _documents(path: str) -> dict[str, str]:
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{path}: no such file")
    docs = {}
    with open(p, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}, line {lineno}: not JSON ({exc.msg})") from None
            if not isinstance(obj, dict) or "id" not in obj:
                raise ValueError(f"{path}, line {lineno}: expected an object with id and "
                                 "contents (or title, text)")
            text = obj.get("contents") if "contents" in obj else " ".join(
                str(obj.get(k, "")) for k in ("title", "text"))
            docs[str(obj["id"])] = str(text)
    return docs


class Command(ManifestMixin, BaseCommand):
    help = ("Pseudo-qrels (Sakai, Dou & Clarke 2013): each subtopic string without its topic "
            "string is counted in every pooled document; level = max(0, floor(ln(count) + 1)). "
            "Writes diversity qrels (topic intent docid level).")

    def add_arguments(self, parser):
        parser.add_argument("--topics", required=True, help="TSV: topic, topic string")
        parser.add_argument("--subtopics", required=True, help="TSV: topic, intent, subtopic string")
        parser.add_argument("--pool", required=True,
                            help="pooled documents: lines whose first two fields are topic docid "
                                 "(export_pool's txt format)")
        parser.add_argument("--docs", required=True, help="JSON lines with id and contents (or title, text)")
        parser.add_argument("--probabilities", help="topic intent probability: with --match-intents, "
                                                    "keep the most probable intents")
        parser.add_argument("--match-intents",
                            help="diversity qrels whose per-topic count of intents with a relevant "
                                 "document the kept intents must match")
        parser.add_argument("--out", required=True)

    def handle(self, *args, **o):
        try:
            topics = {t: s for t, s in _tsv(o["topics"], 2, "topic, topic string")}
            subtopics: dict = {}
            for t, i, s in _tsv(o["subtopics"], 3, "topic, intent, subtopic string"):
                if i in subtopics.setdefault(t, {}):
                    raise ValueError(f"{o['subtopics']}: topic {t} intent {i} appears twice")
                subtopics[t][i] = s
            if bool(o["probabilities"]) != bool(o["match_intents"]):
                raise ValueError("--probabilities and --match-intents go together")
            if o["probabilities"]:
                from evaluation.measures import read_intent_probabilities, read_qrels

                counts = {t: sum(1 for docs in intents.values() if any(g > 0 for g in docs.values()))
                          for t, intents in read_qrels(o["match_intents"], "diversity").judgments.items()}
                keep = pseudoqrels.truncate_intents(read_intent_probabilities(o["probabilities"]), counts)
                subtopics = {t: {i: s for i, s in d.items() if i in keep.get(t, [])}
                             for t, d in subtopics.items() if t in keep}
            pool: dict = {}
            with open(o["pool"], encoding="utf-8") as fh:
                for lineno, line in enumerate(fh, 1):
                    parts = line.split()
                    if not parts or parts[0].startswith("#"):
                        continue
                    if len(parts) < 2:
                        raise ValueError(f"{o['pool']}, line {lineno}: expected topic docid")
                    pool.setdefault(parts[0], []).append(parts[1])
            docs = _documents(o["docs"])

            def text(docid: str) -> str:
                if docid not in docs:
                    raise ValueError(f"{o['docs']}: no document {docid} (pooled)")
                return docs[docid]

            qrels, notes = pseudoqrels.pseudo_qrels(topics, subtopics, pool, text)
        except (ValueError, OSError) as exc:
            raise CommandError(str(exc)) from None
        with open(o["out"], "w", encoding="utf-8") as fh:
            for q in qrels:
                fh.write(f"{q.topic} {q.intent} {q.docid} {q.level}\n")
        for note in notes:
            self.stderr.write(note)
        relevant = sum(1 for q in qrels if q.level > 0)
        self.stdout.write(f"wrote {len(qrels)} pseudo-judgments ({relevant} with a level above 0) "
                          f"to {o['out']}")
