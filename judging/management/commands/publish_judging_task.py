"""python manage.py publish_judging_task --task NAME --completion-code C --consent-file F
[--judgments-for-code N] [--gold-set S --gold-rate R] [...]"""
from django.core.management.base import BaseCommand, CommandError

from judging import selectors, services


class Command(BaseCommand):
    help = (
        "Open an intent- or topic-mode judging task to crowd workers (Prolific or MTurk) "
        "and print the links to give the platform. A worker gets the completion code after "
        "--judgments-for-code judgments, with at least --gold-min-accuracy of the gold "
        "items (documents graded in --gold-set, --gold-rate of the pages) agreeing."
    )

    def add_arguments(self, parser):
        parser.add_argument("--task", required=True, help="judging task name")
        parser.add_argument("--completion-code", required=True)
        parser.add_argument("--consent-file", required=True,
                            help="UTF-8 text file with the consent text workers accept")
        parser.add_argument("--judgments-for-code", type=int, default=None,
                            help="judgments a worker makes for the code (default: the "
                                 "task's batch size)")
        parser.add_argument("--gold-set", default="", help="judgment set of gold items")
        parser.add_argument("--gold-rate", type=float, default=0.0,
                            help="share of pages that are gold items, 0 <= R < 1")
        parser.add_argument("--gold-min-accuracy", type=float, default=0.7)
        parser.add_argument("--title", default="", help="what workers see")
        parser.add_argument("--prolific-study-id", default="")
        parser.add_argument("--mturk-hit-ids", default="", help="comma-separated HIT ids")
        parser.add_argument("--base-url", default="",
                            help="scheme and host of the site (e.g. https://judge.example."
                                 "org) to print absolute links; default: paths")

    def handle(self, *args, **o):
        try:
            with open(o["consent_file"], encoding="utf-8") as fh:
                consent = fh.read().strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"--consent-file: cannot read {o['consent_file']!r}: {exc}") \
                from None
        if not consent:
            raise CommandError(f"--consent-file: {o['consent_file']!r} is empty")
        if not o["completion_code"].strip():
            raise CommandError("--completion-code must not be empty")
        try:
            task = selectors.task_get(o["task"])
            gold = selectors.judgment_set_get(o["gold_set"]) if o["gold_set"] else None
            judgments = o["judgments_for_code"]
            task = services.judging_task_publish(
                task, completion_code=o["completion_code"].strip(), consent_text=consent,
                judgments=task.batch if judgments is None else judgments,
                gold_set=gold, gold_rate=o["gold_rate"],
                gold_min_accuracy=o["gold_min_accuracy"], title=o["title"],
                prolific_study_id=o["prolific_study_id"].strip(),
                mturk_hit_ids="\n".join(h.strip() for h in o["mturk_hit_ids"].split(",")
                                        if h.strip()))
            links = selectors.task_crowd_links(task, o["base_url"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        gold_note = (f", with at least {task.gold_min_accuracy} of gold items from "
                     f"{task.gold_set.name} ({task.gold_rate} of pages) agreeing"
                     if task.gold_set else "")
        self.stdout.write(f"published task {task.name!r}: completion code after "
                          f"{task.crowd_judgments} judgments{gold_note}")
        self.stdout.write(f"Prolific: {links['prolific']}")
        self.stdout.write(f"MTurk: {links['mturk']}")
