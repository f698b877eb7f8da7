"""Create a study over every statement of a topic set and print its entry link."""
from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse

from crowd.models import Study
from crowd.selectors import PROLIFIC_QUERY
from crowd.services import study_create
from topics.models import Statement, TopicSet

UQV100_ESTIMATES = "0\n1\n2\n3-5\n6-10\n11-100\n101+"


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser):
        parser.add_argument("topic_set")
        parser.add_argument("--name", required=True, help="internal name (organisers only)")
        parser.add_argument("--title", default="",
                            help=f"title workers see (default {Study.DEFAULT_TITLE!r})")
        parser.add_argument("--instructions", default="",
                            help="instructions shown to workers, or @file to read them")
        parser.add_argument("--prolific-study-id", default="",
                            help="refuse Prolific arrivals whose STUDY_ID differs")
        parser.add_argument("--hit-id", action="append", default=[], dest="hit_ids",
                            help="refuse MTurk arrivals from other HITs (repeat for several)")
        parser.add_argument("--completion-code", required=True)
        parser.add_argument("--consent", required=True, help="consent text, or @file to read it")
        parser.add_argument("--responses", type=int, default=10, help="answers wanted per statement")
        parser.add_argument("--per-worker", type=int, default=5, help="statements per worker")
        parser.add_argument("--max-chars", type=int, default=200)
        parser.add_argument("--min-seconds", type=float, default=5.0)
        parser.add_argument("--spell-correct", action="store_true",
                            help="correct typos in the variants towards words the topic uses "
                                 "(see import_variants --spell-correct)")
        parser.add_argument("--question", default="", help='e.g. "How many useful documents would you need?"')
        parser.add_argument("--choices", default="", help="question choices separated by |; 'uqv100' for UQV100's")
        parser.add_argument("--attention", action="append", default=[], metavar="PROMPT=ANSWER",
                            help='e.g. "Ignore the description and type the word purple.=purple"')
        parser.add_argument("--gold", action="append", default=[], metavar="TOPIC_ID=QUERY|QUERY",
                            help="use the topic's first statement as a gold item with known queries")

    def handle(self, *args, **o):
        try:
            ts = TopicSet.objects.get(name=o["topic_set"])
        except TopicSet.DoesNotExist:
            raise CommandError(f"no topic set named {o['topic_set']!r}")
        consent = _text_or_file(o["consent"], "--consent")
        if not consent.strip():
            raise CommandError("--consent is empty: workers must be told what they agree to")
        instructions = _text_or_file(o["instructions"], "--instructions")
        if o["choices"].strip() and not o["question"].strip():
            raise CommandError("--choices needs --question (the question the choices answer)")
        attention = []
        for a in o["attention"]:
            prompt, sep, answer = a.rpartition("=")
            if not sep or not prompt or not answer:
                raise CommandError(f"--attention wants PROMPT=ANSWER, got {a!r}")
            attention.append((prompt, answer))
        gold = []
        for g in o["gold"]:
            topic_id, sep, queries = g.partition("=")
            st = Statement.objects.filter(topic__topic_set=ts, topic__topic_id=topic_id).order_by("position").first()
            if not sep or st is None:
                raise CommandError(f"--gold wants TOPIC_ID=QUERY|QUERY for a topic with a statement, got {g!r}")
            gold.append((st, "\n".join(q for q in queries.split("|") if q.strip())))
        choices = UQV100_ESTIMATES if o["choices"] == "uqv100" else "\n".join(
            c for c in o["choices"].split("|") if c.strip())
        study = study_create(
            topic_set=ts, name=o["name"], consent_text=consent, completion_code=o["completion_code"],
            attention_checks=attention, gold=gold,
            responses_per_statement=o["responses"], statements_per_worker=o["per_worker"],
            max_query_chars=o["max_chars"], min_seconds_per_answer=o["min_seconds"],
            question_text=o["question"], question_choices=choices,
            spell_correct=o["spell_correct"], title=o["title"], instructions=instructions,
            prolific_study_id=o["prolific_study_id"].strip(),
            mturk_hit_ids="\n".join(h.strip() for h in o["hit_ids"] if h.strip()),
        )
        self.stdout.write(f"study {study.pk}: {study.items.count()} items")
        self.stdout.write(reverse("crowd:study_entry", kwargs={"slug": study.slug})
                          + PROLIFIC_QUERY)


def _text_or_file(value: str, option: str) -> str:
    """The option's text, or the contents of the file named after an ``@``."""
    if not value.startswith("@"):
        return value
    try:
        with open(value[1:], encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise CommandError(f"{option}: cannot read {value[1:]!r}: {e}") from None
