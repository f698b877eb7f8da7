"""python manage.py recover [--json]: reconcile the job ledger now, every kind of job (a
worker does it when it starts and celery beat every JOB_RECONCILE_SECONDS)."""
import json

from django.core.management.base import BaseCommand

from jobs import registry
from jobs.models import Reconciliation
from jobs.services import reconcile_all


class Command(BaseCommand):
    help = (
        "Re-queue retrieval chunks, pool builds, analyses and uploads whose worker is gone "
        "(lease expired, or its process on this host died), fail those claimed "
        "JOB_MAX_ATTEMPTS times with the reason, and send a new wake-up for queued work "
        "whose message was lost. Prints what it did. A running worker then picks the work up."
    )

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", dest="as_json")

    def handle(self, *args, as_json, **options):
        found = reconcile_all(origin=Reconciliation.ORIGIN_COMMAND)
        if as_json:
            self.stdout.write(json.dumps({
                plural: {"requeued": r.requeued, "failed": r.failed, "woken": r.woken}
                for plural, r in found.items()}, indent=2))
            return
        names = {kind.plural: kind.name for kind in registry.kinds()}
        for plural, r in found.items():
            one = names.get(plural, plural)
            for pk in r.requeued:
                self.stdout.write(f"{one} {pk}: re-queued ({r.reasons[pk]})")
            for pk in r.failed:
                self.stdout.write(f"{one} {pk}: failed ({r.reasons[pk]})")
            if r.woken:
                self.stdout.write(f"{plural}: woke {len(r.woken)} queued (message older than "
                                  "JOB_WAKEUP_AFTER)")
        if not any(found.values()):
            self.stdout.write("nothing to recover: every running job is held by a live worker")
