"""python manage.py jobs [--json]: retrieval runs and pool builds with their state,
counts, leases and last error."""
import json

from django.core.management.base import BaseCommand
from django.utils import timezone

from pooling.selectors import pool_job_list
from retrieval.selectors import run_job_list


def _lease(holder: str, expires) -> str:
    if not holder:
        return ""
    if expires is None:
        return holder
    left = (expires - timezone.now()).total_seconds()
    return f"{holder} ({'expires in %.0f s' % left if left >= 0 else 'expired %.0f s ago' % -left})"


class Command(BaseCommand):
    help = (
        "List retrieval runs and pool builds: state (queued, running, done, failed), "
        "queries ranked, chunks, who holds the work and until when, and the last error. "
        "--json prints {\"runs\": [...], \"pools\": [...]} for scripts."
    )

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", dest="as_json")

    def handle(self, *args, as_json, **options):
        runs, pools = run_job_list(), pool_job_list()
        if as_json:
            self.stdout.write(json.dumps({
                "runs": [{k: r[k] for k in ("id", "topic_set", "collection", "model", "source",
                                            "state", "done", "total", "error")} for r in runs],
                "pools": [{k: p[k] for k in ("id", "name", "state", "error")} for p in pools],
            }, indent=2))
            return
        self.stdout.write(f"runs ({len(runs)})")
        for r in runs:
            what = " ".join(x for x in (r["topic_set"], r["collection"], r["model"] or r["tag"],
                                        r["source"]) if x)
            c = r["chunks"]
            chunks = (f", chunks {c.get('done', 0)}/{sum(c.values())} done"
                      + (f", {c['failed']} failed" if c.get("failed") else "")) if c else ""
            self.stdout.write(f"  run {r['id']}: {r['state']} {r['done']}/{r['total']} queries"
                              f"{chunks} ({what})")
            for lease in r["leases"]:
                self.stdout.write(f"    chunk {lease['chunk']} attempt {lease['attempt']}: "
                                  f"{_lease(lease['holder'], lease['expires'])}")
            if r["error"]:
                self.stdout.write(f"    error: {r['error']}")
        self.stdout.write(f"pools ({len(pools)})")
        for p in pools:
            progress = f" {p['progress']:.0%}" if p["state"] == "running" else ""
            self.stdout.write(f"  pool {p['id']} {p['name']}: {p['state']}{progress} "
                              f"({p['topic_set']})")
            if p["holder"]:
                self.stdout.write(f"    attempt {p['attempts']}: "
                                  f"{_lease(p['holder'], p['expires'])}")
            if p["error"]:
                self.stdout.write(f"    error: {p['error']}")
