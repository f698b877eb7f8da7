"""The Celery application: `celery -A config worker` starts a worker.

Settings come from Django settings under the ``CELERY_`` namespace. Importing this module
never starts a JVM: retrieval code starts one lazily inside each worker process.

When a worker starts it asks for a reconciliation of every kind of job
(jobs.services.reconcile_all): work whose holder died with the previous worker is
re-queued at once, not after a lease or visibility timeout. Beat repeats it every
JOB_RECONCILE_SECONDS (settings.CELERY_BEAT_SCHEDULE).
"""
import os

from celery import Celery
from celery.signals import worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_ready.connect
def _reconcile_on_start(sender=None, **kwargs):
    app.send_task("jobs.tasks.reconcile_all_task", kwargs={"origin": "start"})
