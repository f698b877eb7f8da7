"""The assessors' pages: their tasks, the judging page, undo."""
from __future__ import annotations

from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from .. import selectors, services
from ..forms import ref_loads
from .page import item_intents, may_judge, new_ref, page_context, submit, task_or_404


def _assessor_task(request, name: str):
    """The task, when this signed-in account is one of its assessors; else 404."""
    task = task_or_404(name)
    user = request.user.get_username()
    if not may_judge(task, user):
        raise Http404("No such judging task.")
    return task, user


@require_http_methods(["GET"])
def index(request):
    """The assessor's home: their tasks and progress; organisers get a link to theirs."""
    user = request.user.get_username()
    rows = [{"task": t, "mine": selectors.assessor_progress(t, user)}
            for t in selectors.task_list(user) if t.study_id is None]
    return render(request, "judging/index.html", {"rows": rows})


@require_http_methods(["GET", "POST"])
def judge(request, name):
    """The judging page: the next document of the assessor's batch, or with ``?item=`` one
    of their own judged documents to revise. POST records the judgment."""
    task, user = _assessor_task(request, name)
    if request.method == "POST":
        ok, form = submit(request, task, user, item_intents(task))
        if ok:
            return redirect("judging:judge", name=task.name)
        ref = request.POST["ref"]
        item = selectors.task_item_get(task, ref_loads(ref)["i"])
        return render(request, "judging/judge.html", page_context(
            task, user, topic_id=item.topic_id, docid=item.docid, form=form, ref=ref,
            intents=form.intents, back_url=_back_url(task, user, item.pk)), status=400)
    item_param = request.GET.get("item", "")
    if item_param:
        recent = selectors.assessor_recent_labels(task, user, limit=50)
        if not item_param.isdigit():
            raise Http404("No such item.")
        current = selectors.assessor_item_labels(task, user, int(item_param))
        if current is None:  # not one of this assessor's judged items
            raise Http404("No such item.")
        item = selectors.task_item_get(task, int(item_param))
        intents = task.topics.get(topic_id=item.topic_id).intents
        return render(request, "judging/judge.html", page_context(
            task, user, topic_id=item.topic_id, docid=item.docid, intents=intents,
            ref=new_ref(task, item_id=item.pk, intents=intents), current=current,
            back_url=_back_url(task, user, item.pk, recent), undo_item=item.pk))
    try:
        batch = services.batch_lease(task, user)
    except services.QueueError as exc:
        return render(request, "judging/message.html", {"task": task, "message": str(exc)},
                      status=409)
    mine = selectors.assessor_progress(task, user, pace=True)
    back_url = _item_url(task, mine["last_item"])
    if not batch:
        return render(request, "judging/finished.html", {
            "task": task, "mine": mine, "back_url": back_url})
    leased = batch[0]
    return render(request, "judging/judge.html", page_context(
        task, user, topic_id=leased.topic_id, docid=leased.docid, intents=leased.intents,
        ref=new_ref(task, item_id=leased.item_id, intents=leased.intents),
        back_url=back_url, mine=mine))


def _item_url(task, item_id: int | None) -> str:
    if item_id is None:
        return ""
    return f"{reverse('judging:judge', kwargs={'name': task.name})}?item={item_id}"


def _back_url(task, user, item_id, recent=None) -> str:
    """The page of the judgment made just before ``item_id`` (or the latest, on a new
    document)."""
    recent = selectors.assessor_recent_labels(task, user, limit=50) if recent is None else recent
    ids = [r["item_id"] for r in recent]
    if item_id in ids:
        ids = ids[ids.index(item_id) + 1:]
    else:
        ids = [i for i in ids if i != item_id]
    return _item_url(task, ids[0] if ids else None)


@require_POST
def undo(request, name):
    """Withdraw the assessor's latest judgment of an item (the one before counts again)."""
    task, user = _assessor_task(request, name)
    item_id = request.POST.get("item", "")
    if not item_id.isdigit():
        raise Http404("No such item.")
    try:
        services.judgment_undo(task, user, int(item_id))
    except services.QueueError as exc:
        return render(request, "judging/message.html", {"task": task, "message": str(exc)},
                      status=409)
    if selectors.assessor_item_labels(task, user, int(item_id)) is not None:
        return redirect(f"{reverse('judging:judge', kwargs={'name': name})}?item={item_id}")
    return redirect("judging:judge", name=name)
