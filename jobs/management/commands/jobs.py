"""python manage.py jobs [--json] [--check-beat]: every kind of background job (retrieval
runs, pool builds, analyses, uploads) with its state, progress, leases and last error;
--check-beat says whether the scheduled reconciler (celery beat) is alive."""
import json

from django.core.management.base import BaseCommand, CommandError

from jobs import registry
from jobs.selectors import beat_state


class Command(BaseCommand):
    help = (
        "List background jobs of every kind: retrieval runs (queries ranked, chunks), pool "
        "builds, analyses and uploads, with their state (queued, running, done, failed), "
        "who holds the work and until when, and the last error. --json prints "
        "{\"runs\": [...], \"pools\": [...], \"analyses\": [...], \"uploads\": [...]} for "
        "scripts. --check-beat exits 1, saying why, when no scheduled reconciliation ran "
        "within 3 x JOB_RECONCILE_SECONDS (beat is not running)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", dest="as_json")
        parser.add_argument("--check-beat", action="store_true", dest="check_beat",
                            help="exit 1 unless celery beat ran the reconciler lately")

    def handle(self, *args, as_json, check_beat, **options):
        if check_beat:
            state = beat_state()
            if not state.alive:
                raise CommandError(state.message, returncode=1)
            self.stdout.write(state.message)
            return
        listed = [(kind, kind.listing()) for kind in registry.kinds()]
        if as_json:
            self.stdout.write(json.dumps({
                kind.listing_key: [{k: row[k] for k in kind.json_fields} for row in rows]
                for kind, rows in listed}, indent=2))
            return
        for kind, rows in listed:
            self.stdout.write(f"{kind.listing_key} ({len(rows)})")
            for row in rows:
                for line in kind.lines(row):
                    self.stdout.write(f"  {line}")
