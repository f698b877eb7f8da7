"""The Celery application: `celery -A config worker` starts a worker.

Settings come from Django settings under the ``CELERY_`` namespace. Importing this module
never starts a JVM: retrieval code starts one lazily inside each worker child.
"""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
