"""A task whose retries are exhausted fails the unit left waiting for them
(:class:`jobs.leases.LeasedTask`), through the app's own service and with the app's own
message, whether the unit's id came as the first argument or by keyword."""
import inspect

import pytest
from django.db import OperationalError
from django.utils.module_loading import import_string

from evaluation.models import Analysis
from evaluation.tasks import analysis_run_task
from jobs import registry
from jobs.leases import LeasedTask
from uploads.models import Upload
from uploads.tasks import upload_import_task

pytestmark = pytest.mark.django_db

ANALYSIS_MESSAGE = ("The analysis stopped on an unexpected error (OperationalError: server "
                    "closed the connection). Run it again; if it fails the same way, report "
                    "this message.")


def _exhausted(task, args=(), kwargs=None):
    """What Celery calls once the last retry raised."""
    task.on_failure(OperationalError("server closed the connection"), "task-id", args,
                    kwargs or {}, None)


@pytest.mark.parametrize("by", ["position", "keyword"])
def test_exhausted_retries_fail_the_waiting_unit_with_the_apps_message(by):
    analysis = Analysis.objects.create(kind="evaluate", status="queued",
                                       error="will retry: OperationalError")
    if by == "position":
        _exhausted(analysis_run_task, args=(analysis.pk,))
    else:
        _exhausted(analysis_run_task, kwargs={"analysis_id": analysis.pk})
    analysis.refresh_from_db()
    assert (analysis.status, analysis.error) == ("failed", ANALYSIS_MESSAGE)
    assert analysis.finished is not None  # the app's service, not only the ledger's update


def test_without_a_message_function_the_error_is_its_type_and_text():
    upload = Upload.objects.create(kind="topics", filename="t.tsv", path="x", status="queued")
    _exhausted(upload_import_task, kwargs={"upload_id": upload.pk})
    upload.refresh_from_db()
    assert (upload.status, upload.error) == (
        "failed", "OperationalError: server closed the connection")


def test_a_finished_unit_is_left_as_it_is():
    analysis = Analysis.objects.create(kind="evaluate", status="done", result={"ok": 1})
    _exhausted(analysis_run_task, args=(analysis.pk,))
    analysis.refresh_from_db()
    assert (analysis.status, analysis.error) == ("done", "")


def test_no_unit_id_does_nothing(django_assert_num_queries):
    analysis = Analysis.objects.create(kind="evaluate", status="queued")
    with django_assert_num_queries(0):
        _exhausted(analysis_run_task)
        _exhausted(analysis_run_task, kwargs={"pool_id": analysis.pk})  # another task's key
    analysis.refresh_from_db()
    assert analysis.status == "queued"


@pytest.mark.parametrize("kind", registry.kinds(), ids=lambda k: k.name)
def test_every_kind_of_job_fails_its_units_through_a_leased_task(kind):
    """Each app's task names its own failure functions by dotted path, imported only on
    failure: a misspelt path or argument would surface only when retries run out."""
    task = import_string(kind.task)
    assert isinstance(task, LeasedTask), f"{kind.task} is not a jobs.leases.LeasedTask"
    first = next(iter(inspect.signature(task.run).parameters))
    assert task.unit_arg == first, f"{kind.task}: unit_arg {task.unit_arg!r}, runs on {first!r}"
    assert callable(import_string(task.unit_fail))
    if task.unit_failure_message:
        assert callable(import_string(task.unit_failure_message))
