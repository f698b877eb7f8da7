"""The project's Celery app, for a worker that kills itself (SIGKILL) inside an upload's
import transaction: after the import wrote every row, before the upload's done mark --
where the OOM killer or a power cut could stop a worker. Started by
tests/jobs/test_upload_exactly_once.py as ``celery -A tests.jobs.dies_before_commit
worker -P solo``."""
import os
import signal

from config.celery_app import app  # noqa: F401  (the worker's app)
from jobs import leases


def _dies_here(model, pk, holder):
    os.kill(os.getpid(), signal.SIGKILL)


leases.held = _dies_here
