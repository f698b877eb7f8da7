"""The crowd workers' pages of a published task, under ``w/<study slug>/``."""
from __future__ import annotations

from django.conf import settings
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from .. import selectors, services
from .page import item_intents, new_ref, page_context, submit


_HOLD_SALT = "judging.worker"


def _crowd_task(slug: str):
    from crowd.selectors import study_get_by_slug

    study = study_get_by_slug(slug)
    task = getattr(study, "judging_task", None)
    if task is None:
        raise Http404("No such task.")
    return task


def _cookie(slug: str) -> str:
    return f"judging_{slug}"


def _worker(request, slug: str):
    """The crowd participant this browser holds for the task's study, or 404."""
    from crowd.selectors import participant_get_for_session

    value = request.get_signed_cookie(_cookie(slug), default=None, salt=_HOLD_SALT)
    pid, _, token = (value or "").partition(".")
    if not pid.isdigit() or not token:
        raise Http404("No task in progress in this browser.")
    return participant_get_for_session(slug=slug, participant_id=int(pid), token=token)


def _worker_name(participant) -> str:
    return f"{participant.platform}:{participant.worker_id}"


def _arrival(request):
    """(platform, worker id, external study id, external session id) from the link."""
    from crowd.models import Participant

    q = request.GET
    if q.get("PROLIFIC_PID"):
        return (Participant.PLATFORM_PROLIFIC, q["PROLIFIC_PID"], q.get("STUDY_ID", ""),
                q.get("SESSION_ID", ""))
    if q.get("workerId"):
        return (Participant.PLATFORM_MTURK, q["workerId"], q.get("hitId", ""),
                q.get("assignmentId", ""))
    return None


@require_http_methods(["GET"])
def crowd_entry(request, slug):
    """The public link of a published task: a worker arrives from Prolific or MTurk."""
    from crowd.services import StudyError, participant_arrive

    task = _crowd_task(slug)
    study = task.study
    arrival = _arrival(request)
    if arrival is None:
        try:
            _worker(request, slug)
            return redirect("judging:crowd_judge", slug=slug)
        except Http404:
            return render(request, "judging/crowd_message.html", {
                "study": study, "message": "Please open this task from your recruitment "
                "platform's study page: the link identifies you."}, status=403)
    platform, worker_id, ext_study, ext_session = arrival
    try:
        held = _worker(request, slug)
    except Http404:
        held = None
    try:
        p = participant_arrive(
            study=study, platform=platform, worker_id=worker_id, external_study_id=ext_study,
            external_session_id=ext_session,
            session_token=held.session_token if held is not None else "",
            submit_to=request.GET.get("turkSubmitTo", ""))
    except StudyError as exc:
        return render(request, "judging/crowd_message.html", {"study": study,
                                                              "message": str(exc)}, status=403)
    response = redirect("judging:crowd_judge", slug=slug)
    response.set_signed_cookie(
        _cookie(slug), f"{p.pk}.{p.session_token}", salt=_HOLD_SALT,
        max_age=settings.SESSION_COOKIE_AGE,
        path=reverse("judging:crowd_entry", kwargs={"slug": slug}),
        secure=settings.SESSION_COOKIE_SECURE, httponly=True,
        samesite=settings.SESSION_COOKIE_SAMESITE)
    return response


@require_http_methods(["GET", "POST"])
def crowd_consent(request, slug):
    from crowd.forms import ConsentForm
    from crowd.services import participant_consent

    task = _crowd_task(slug)
    p = _worker(request, slug)
    if p.consented is not None:
        return redirect("judging:crowd_judge", slug=slug)
    form = ConsentForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        participant_consent(participant=p)
        return redirect("judging:crowd_judge", slug=slug)
    return render(request, "judging/crowd_consent.html", {"study": task.study, "form": form,
                                                          "task": task})


@require_http_methods(["GET", "POST"])
def crowd_judge(request, slug):
    """A worker's next page: a gold item when one is due, else the next document of their
    batch; the completion page once they have made the judgments needed."""
    task = _crowd_task(slug)
    p = _worker(request, slug)
    if p.consented is None:
        return redirect("judging:crowd_consent", slug=slug)
    name = _worker_name(p)
    study = task.study
    if request.method == "POST":
        ok, form = submit(request, task, name, item_intents(task), crowd=True)
        if ok:
            return redirect("judging:crowd_judge", slug=slug)
        return render(request, "judging/crowd_message.html", {
            "study": study, "message": " ".join(" ".join(v) for v in form.errors.values()),
            "retry_url": reverse("judging:crowd_judge", kwargs={"slug": slug})}, status=400)
    status = selectors.crowd_worker_status(task, name)
    if status["status"] != "working":
        return redirect("judging:crowd_done", slug=slug)
    gold = selectors.gold_next(task, name, status)
    if gold is not None:
        intents = task.topics.get(topic_id=gold.topic_id).intents
        ctx = page_context(task, name, topic_id=gold.topic_id, docid=gold.docid,
                            intents=intents, ref=new_ref(task, gold=(gold.topic_id, gold.docid),
                                                          intents=intents),
                            progress=False)
    else:
        try:
            batch = services.batch_lease(task, name)
        except services.QueueError as exc:
            return render(request, "judging/crowd_message.html",
                          {"study": study, "message": str(exc)}, status=409)
        if not batch:
            return redirect("judging:crowd_done", slug=slug)
        leased = batch[0]
        ctx = page_context(task, name, topic_id=leased.topic_id, docid=leased.docid,
                            intents=leased.intents,
                            ref=new_ref(task, item_id=leased.item_id, intents=leased.intents),
                            progress=False)
    ctx.update(study=study, crowd=True, status=status,
               needed=task.crowd_judgments, keys={**ctx["keys"], "back": ""})
    return render(request, "judging/judge.html", ctx)


@require_http_methods(["GET"])
def crowd_done(request, slug):
    task = _crowd_task(slug)
    p = _worker(request, slug)
    status = selectors.crowd_worker_status(task, _worker_name(p))
    # "working" here: nothing was left to judge before the worker made the judgments needed
    return render(request, "judging/crowd_done.html", {
        "study": task.study, "participant": p, "status": status, "task": task})
