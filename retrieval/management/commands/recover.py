"""python manage.py recover [--json]: reconcile the job ledger now (a worker does it when
it starts and every minute under beat)."""
import json

from django.core.management.base import BaseCommand

from pooling.services import pools_reconcile
from retrieval.services import chunks_reconcile


class Command(BaseCommand):
    help = (
        "Re-queue retrieval chunks and pool builds whose worker is gone (lease expired, or "
        "its process on this host died), fail those claimed JOB_MAX_ATTEMPTS times with "
        "the reason, and send a new wake-up for queued work whose message was lost. Prints "
        "what it did. A running worker then picks the work up."
    )

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", dest="as_json")

    def handle(self, *args, as_json, **options):
        found = {"chunks": chunks_reconcile(), "pools": pools_reconcile()}
        if as_json:
            self.stdout.write(json.dumps({
                kind: {"requeued": r.requeued, "failed": r.failed, "woken": r.woken}
                for kind, r in found.items()}, indent=2))
            return
        for kind, r in found.items():
            for pk in r.requeued:
                self.stdout.write(f"{kind[:-1]} {pk}: re-queued ({r.reasons[pk]})")
            for pk in r.failed:
                self.stdout.write(f"{kind[:-1]} {pk}: failed ({r.reasons[pk]})")
            if r.woken:
                self.stdout.write(f"{kind}: woke {len(r.woken)} queued (message older than "
                                  "JOB_WAKEUP_AFTER)")
        if not any(found.values()):
            self.stdout.write("nothing to recover: every running job is held by a live worker")
