"""The organisers' pages under ``manage/``: tasks, progress, stopping, collection,
publishing, exports."""
from __future__ import annotations

from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from common.webmessages import web_message

from .. import analysis, labelfiles, selectors, services
from ..forms import CollectionForm, InviteForm, PublishForm, StopRuleForm
from .invites import new_invite_pop
from .page import bar, may_judge, task_or_404


@require_http_methods(["GET"])
def manage_list(request):
    rows = [{"task": t, "progress": selectors.task_progress_held(t)}
            for t in selectors.task_list()]
    return render(request, "judging/manage_list.html", {"rows": rows})


@require_http_methods(["GET"])
def manage_task(request, name):
    task = task_or_404(name)
    progress = selectors.task_progress(task)
    try:
        collection = selectors.task_collection(task).name
    except ValueError:
        collection = ""
    crowd_links = (selectors.task_crowd_links(task, request.build_absolute_uri("/"))
                   if task.study_id else None)
    return render(request, "judging/manage_task.html", {
        "task": task, "total": bar(progress["total"]),
        "topics": [{"topic_id": t, **bar(e)} for t, e in progress["topics"].items()],
        "intents": selectors.task_intent_stats(task),
        "assessors": selectors.task_assessor_stats(task),
        "agreement": selectors.task_agreement(task),
        "gold": selectors.task_gold_accuracy(task),
        "collection": collection, "collection_form": CollectionForm(current=collection),
        "may_judge": may_judge(task, request.user.get_username()),
        "publish_form": PublishForm() if not task.study_id else None,
        "crowd_links": crowd_links, "formats": selectors.task_export_formats(task.mode),
        "recall": analysis.task_recall_estimates(task),
        "stop_form": StopRuleForm(initial={"rule": task.stop_rule}),
        "invites": selectors.task_invites(task), "invite_form": InviteForm(),
        "new_invite": new_invite_pop(request, task),
        "sample_design": selectors.sample_design_of(task.judgment_set),
    })


@require_POST
def manage_stop(request, name):
    """Set or clear the task's stopping rule."""
    task = task_or_404(name)
    form = StopRuleForm(request.POST)
    if not form.is_valid():
        message = " ".join(e for errors in form.errors.values() for e in errors)
        return render(request, "judging/message.html", {"task": task, "message": message},
                      status=400)
    services.judging_task_stop_rule_set(task, form.cleaned_data["rule"])
    return redirect("judging:manage_task", name=name)


@require_POST
def manage_resume(request, name):
    """Go on judging a topic the stopping rule stopped."""
    task = task_or_404(name)
    try:
        services.topic_resume(task, request.POST.get("topic", ""))
    except ValueError as exc:
        return render(request, "judging/message.html", {"task": task, "message": str(exc)},
                      status=400)
    return redirect("judging:manage_task", name=name)


@require_POST
def manage_collection(request, name):
    task = task_or_404(name)
    form = CollectionForm(request.POST)
    if not form.is_valid():
        message = " ".join(e for errors in form.errors.values() for e in errors)
        return render(request, "judging/message.html", {"task": task, "message": message},
                      status=400)
    try:
        services.judging_task_collection_set(task, form.cleaned_data["collection"])
    except ValueError as exc:
        return render(request, "judging/message.html", {"task": task, "message": str(exc)},
                      status=400)
    return redirect("judging:manage_task", name=name)


@require_POST
def manage_publish(request, name):
    task = task_or_404(name)
    form = PublishForm(request.POST)
    if not form.is_valid():
        return render(request, "judging/message.html", {
            "task": task, "message": "; ".join(f"{k}: {' '.join(v)}"
                                                for k, v in form.errors.items())}, status=400)
    d = form.cleaned_data
    try:
        gold = selectors.judgment_set_get(d["gold_set"]) if d["gold_set"] else None
        services.judging_task_publish(
            task, completion_code=d["completion_code"], consent_text=d["consent_text"],
            judgments=d["judgments"], gold_set=gold, gold_rate=d["gold_rate"],
            gold_min_accuracy=d["gold_min_accuracy"], title=d["title"],
            prolific_study_id=d["prolific_study_id"], mturk_hit_ids=d["mturk_hit_ids"])
    except ValueError as exc:
        return render(request, "judging/message.html", {"task": task, "message": str(exc)},
                      status=400)
    return redirect("judging:manage_task", name=name)


@require_http_methods(["GET"])
def manage_export(request, name, fmt):
    """A download of the task's judgment set as ``export_qrels`` writes it."""
    task = task_or_404(name)
    if fmt not in selectors.EXPORT_FORMATS:
        raise Http404("No such format.")
    aggregate = request.GET.get("aggregate", "majority")
    adhoc_intent = request.GET.get("adhoc_intent") or None
    response = HttpResponse(content_type="text/plain; charset=utf-8")
    try:
        if fmt == "raw":
            labelfiles.write_raw(response, selectors.raw_rows(task.judgment_set))
        elif fmt in selectors.SAMPLE_FORMATS:
            selectors.sample_export_write(response, task.judgment_set, fmt, aggregate)
        else:
            labelfiles.write_qrels(response, selectors.qrels_lines(
                task.judgment_set, fmt, aggregate=aggregate, adhoc_intent=adhoc_intent))
    except ValueError as exc:
        return render(request, "judging/message.html", {"task": task, "message": web_message(exc)},
                      status=400)
    response["Content-Disposition"] = f'attachment; filename="{task.name}.{fmt}.txt"'
    return response
