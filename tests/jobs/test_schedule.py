"""The schedule beat sends, and the rules Celery checks before it sends anything."""
import io
from datetime import timedelta

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from config.celery_app import app


def _tasks_loaded() -> None:
    """Import every app's tasks module, as a worker does at start."""
    import importlib
    import importlib.util

    from django.apps import apps

    for config in apps.get_app_configs():
        if importlib.util.find_spec(f"{config.name}.tasks") is not None:
            importlib.import_module(f"{config.name}.tasks")
from jobs import registry
from jobs.models import Reconciliation


def test_every_task_can_be_sent_with_its_time_limits():
    """Celery refuses to send a task whose soft limit passes its hard one; a task with only
    a hard limit inherits the global soft limit (beat logged SchedulingError every minute
    for the reconcile tasks, time_limit 5 min under a 55 min global soft limit)."""
    _tasks_loaded()
    ours = {name: task for name, task in app.tasks.items() if not name.startswith("celery.")}
    assert "jobs.tasks.reconcile_all_task" in ours
    for name, task in ours.items():
        soft = task.soft_time_limit or app.conf.task_soft_time_limit
        hard = task.time_limit or app.conf.task_time_limit
        assert not (soft and hard and soft > hard), f"{name}: soft limit {soft} > hard {hard}"


def test_each_scheduled_entry_names_a_task_and_expires_after_its_interval():
    _tasks_loaded()
    schedule = settings.CELERY_BEAT_SCHEDULE
    assert list(schedule) == ["jobs-reconcile"]  # one reconciler for every kind of job
    for name, entry in schedule.items():
        assert entry["task"] in app.tasks, name
        assert entry["schedule"] == settings.JOB_RECONCILE_SECONDS
        assert entry["options"]["expires"] == entry["schedule"]


def test_every_kind_of_job_is_registered_with_a_task_that_exists():
    _tasks_loaded()
    kinds = {k.name: k for k in registry.kinds()}
    assert list(kinds) == ["chunk", "pool", "refit", "analysis", "upload"]
    for kind in kinds.values():
        assert kind.task in app.tasks, kind.task
    with pytest.raises(LookupError, match="no job kind 'nope'"):
        registry.kind_get("nope")


@pytest.mark.django_db
def test_check_beat_fails_without_a_recent_scheduled_pass(settings):
    settings.JOB_RECONCILE_SECONDS = 10
    with pytest.raises(CommandError, match="beat has never run") as err:
        call_command("jobs", "--check-beat")
    assert err.value.returncode == 1
    # passes started by a worker or by `recover` say nothing about beat
    Reconciliation.objects.create(started=timezone.now(), origin="command")
    with pytest.raises(CommandError, match="beat has never run"):
        call_command("jobs", "--check-beat")
    Reconciliation.objects.create(started=timezone.now() - timedelta(seconds=31),
                                  origin="beat")
    with pytest.raises(CommandError, match=r"started 31 s ago .* more than 3 × "
                                           r"JOB_RECONCILE_SECONDS=10 s"):
        call_command("jobs", "--check-beat")
    Reconciliation.objects.create(started=timezone.now() - timedelta(seconds=25),
                                  origin="beat")
    out = io.StringIO()
    call_command("jobs", "--check-beat", stdout=out)
    assert out.getvalue().startswith("beat is alive: the last scheduled reconciliation "
                                     "started 25 s ago (every 10 s)")


@pytest.mark.django_db
def test_recover_records_its_pass(django_capture_on_commit_callbacks):
    out = io.StringIO()
    call_command("recover", stdout=out)
    (record,) = Reconciliation.objects.all()
    assert (record.origin, record.error) == ("command", "")
    assert record.finished >= record.started
    assert record.counts == {k: {"requeued": 0, "failed": 0, "woken": 0}
                             for k in ("chunks", "pools", "refits", "analyses", "uploads")}
