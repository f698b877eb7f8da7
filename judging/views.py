"""Pages of the judging app: assessors judge, organisers follow progress, crowd workers
judge a published task.

Three kinds of visitor, kept apart (who reaches which page is the table in common.roles;
the views here decide which rows each sees):

- assessors (signed-in accounts) reach a task when it lists them, or when it lists no one
  and is not published to the crowd; they judge as their user name and see only their own
  labels;
- organisers (staff) reach the task list, progress, exports and publishing under
  ``manage/``;
- crowd workers reach only ``w/<study slug>/``: the crowd app identifies them from the
  Prolific or MTurk link, and their browser holds a signed cookie scoped to that path.

The judging form posts without JavaScript; a signed reference in the form carries the
item, an idempotency key and the time the page was shown, so a double or retried submit
writes nothing twice. Document text is shown as text: the template escapes every piece.
"""
from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict

from django.conf import settings
from django.core import signing
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from . import analysis, labelfiles, selectors, services
from .docfields import statement_shown
from .doctext import marked_segments, query_terms
from .forms import (
    CollectionForm,
    JudgmentForm,
    PublishForm,
    StopRuleForm,
    ref_dumps,
    ref_loads,
)


NEXT_KEYS = ("n", "Enter")
BACK_KEY = "b"
CANNOT_KEY = "x"
TOPIC_CACHE_SECONDS = 300  # a topic's statement, intents and query texts, per process
TOPICS_KEPT = 256
DOCUMENTS_KEPT = 512  # marked documents kept per process
EMPTY_PROGRESS = {"items": 0, "slots": 0, "done": 0, "leased": 0, "remaining": 0}


# --- shared: one judging page and its submit ---------------------------------------------


def _task_or_404(name: str):
    try:
        return selectors.task_get(name)
    except ValueError:
        raise Http404("No such judging task.") from None


def _bar(entry: dict) -> dict:
    """Percentages of judged, leased and remaining slots, for a stacked bar."""
    total = entry["slots"] or 1
    return {**entry, "done_pct": 100 * entry["done"] / total,
            "leased_pct": 100 * entry["leased"] / total}


def _keys(task) -> dict:
    used = {g["key"] for g in task.scale_grades}
    return {"next": [k for k in NEXT_KEYS if k not in used],
            "back": BACK_KEY if BACK_KEY not in used else "",
            "cannot": CANNOT_KEY if CANNOT_KEY not in used else ""}


def _topic_key(task, topic_id: str, what: str) -> str:
    return f"judging:{what}:{task.pk}:{task.created.timestamp()}:{topic_id}"


_topics: dict[str, tuple[float, dict]] = {}


def _topic_info(task, topic_id: str) -> dict:
    """The topic's statement and intents and the query texts of its documents, kept in
    this process for a few minutes (they do not change while a task is judged; a dict,
    not the cache framework, so a page does not unpickle every query text of a topic)."""
    key = _topic_key(task, topic_id, "topic")
    hit = _topics.get(key)
    if hit is not None and hit[0] > time.monotonic():
        return hit[1]
    topic = selectors.task_topic(task, topic_id)
    info = {"topic_id": topic.topic_id, "title": topic.title,
            "description": topic.description, "narrative": topic.narrative,
            "statements": [s.text for s in topic.statements.all()],
            "intents": {i.intent_id: i.description for i in topic.intents.all()},
            "queries": selectors.topic_query_texts(task, topic_id)}
    if len(_topics) >= TOPICS_KEPT:
        _topics.clear()
    _topics[key] = (time.monotonic() + TOPIC_CACHE_SECONDS, info)
    return info


_documents: OrderedDict[tuple, tuple] = OrderedDict()
_documents_lock = threading.Lock()


def _marked_document(task, topic: dict, docid: str) -> tuple[list, list, list]:
    """The document's title, fields and paragraphs with the query terms marked, kept in this
    process for the last ``DOCUMENTS_KEPT`` documents shown (an item is shown to K
    assessors, and again on every reload), so the index is not read again."""
    collection = selectors.task_collection(task)
    key = (task.pk, task.created, topic["topic_id"], collection.pk, collection.index_path,
           docid)
    with _documents_lock:  # threaded servers (runserver, gthread) share this process's cache
        hit = _documents.get(key)
        if hit is not None and collection.status == "ready":
            _documents.move_to_end(key)
            return hit
    doc = selectors.task_document(task, docid)
    terms = query_terms(topic["queries"].get(docid, []))
    marked = (marked_segments(doc.title, terms),
              [(label, marked_segments(text, terms)) for label, text in doc.fields],
              [marked_segments(p, terms) for p in doc.paragraphs])
    with _documents_lock:
        _documents[key] = marked
        while len(_documents) > DOCUMENTS_KEPT:
            _documents.popitem(last=False)
    return marked


def _page_context(task, assessor: str, *, topic_id: str, docid: str, intents, ref: str,
                  form=None, current: dict | None = None, back_url: str = "",
                  undo_item: int | None = None, progress: bool = True,
                  mine: dict | None = None) -> dict:
    topic = _topic_info(task, topic_id)
    intent_rows = []
    for n, intent in enumerate(intents):
        chosen = (current or {}).get("grades", {}).get(intent)
        intent_rows.append({"n": n, "intent": intent,
                            "description": topic["intents"].get(intent, ""),
                            "chosen": None if chosen is None else str(chosen)})
    if form is None:
        form = JudgmentForm(initial={"ref": ref, "rationale": (current or {}).get("rationale", ""),
                                     "cannot_judge": (current or {}).get("cannot_judge", "")},
                            intents=intents, grades=task.scale_grades)
    document_error = ""
    title, fields, paragraphs = "", [], []
    try:
        title, fields, paragraphs = _marked_document(task, topic, docid)
    except ValueError as exc:
        document_error = str(exc)
    ctx = {
        "task": task, "topic": topic, "docid": docid, "form": form, "ref": ref,
        "intent_rows": intent_rows, "intent_mode": task.mode == task.MODE_INTENT,
        "grades": task.scale_grades, "keys": _keys(task), "doc_title": title,
        "paragraphs": paragraphs, "document_error": document_error, "current": current,
        "back_url": back_url, "undo_item": undo_item,
        "statements": topic["statements"], "doc_fields": fields,
        "statement": statement_shown(topic["title"], topic["description"], topic["narrative"],
                                     topic["statements"]),
    }
    if progress:
        task_progress = selectors.task_progress(task)
        ctx["topic_progress"] = _bar(task_progress["topics"].get(topic_id, EMPTY_PROGRESS))
        ctx["task_progress"] = _bar(task_progress["total"])
        ctx["mine"] = mine or selectors.assessor_progress(task, assessor, pace=True)
    return ctx


def _seconds(ref: dict, js_seconds) -> float:
    """Time on page: the browser's count when given and plausible (no more than the
    server saw pass since it sent the page, plus a second), else the server's."""
    server = max(0.0, time.time() - float(ref["t"]))
    if js_seconds is not None and 0 <= js_seconds <= server + 1:
        return float(js_seconds)
    return server


def _submit(request, task, assessor: str, intents_for, *, crowd: bool = False
            ) -> tuple[bool, object]:
    """Validate and record a posted judgment; ``(True, None)`` when recorded, else
    ``(False, form)`` to show again. ``intents_for(ref)`` gives the intents of the page."""
    ref_raw = request.POST.get("ref", "")
    try:
        ref = ref_loads(ref_raw)
    except signing.BadSignature:
        raise Http404("This page has expired; please open the task again.") from None
    if ref.get("task") != task.pk or ("g" in ref and not crowd):
        raise Http404("This form belongs to another page.")
    form = JudgmentForm(request.POST, intents=intents_for(ref), grades=task.scale_grades)
    if not form.is_valid():
        return False, form
    data = form.cleaned_data
    seconds = _seconds(ref, data.get("js_seconds"))
    try:
        if "g" in ref:
            services.gold_answer_submit(
                task, assessor, topic_id=ref["g"][0], docid=ref["g"][1], grades=form.grades(),
                submit_key=ref["k"], seconds=seconds, cannot_judge=data["cannot_judge"])
        else:
            services.judgment_submit(
                task, assessor, ref["i"], form.grades(), submit_key=ref["k"], seconds=seconds,
                rationale=data.get("rationale", ""), cannot_judge=data["cannot_judge"])
    except services.QueueError as exc:
        form.add_error(None, str(exc))
        return False, form
    return True, None


def _item_intents(task):
    def intents_for(ref):
        if "n" in ref:  # the page's intents, signed into the form
            return ref["n"]
        if "g" in ref:
            topic_id = ref["g"][0]
        else:
            try:
                topic_id = selectors.task_item_get(task, ref["i"]).topic_id
            except ValueError:
                raise Http404("No such item.") from None
        intents = task.topics.filter(topic_id=topic_id).values_list("intents", flat=True).first()
        if intents is None:
            raise Http404("No such topic.")
        return intents
    return intents_for


def _new_ref(task, *, intents, **kw) -> str:
    return ref_dumps(task_id=task.pk, submit_key=secrets.token_urlsafe(18), shown=time.time(),
                     intents=list(intents), **kw)


# --- assessors ----------------------------------------------------------------------------


def _assessor_task(request, name: str):
    """The task, when this signed-in account is one of its assessors; else 404."""
    task = _task_or_404(name)
    user = request.user.get_username()
    if not _may_judge(task, user):
        raise Http404("No such judging task.")
    return task, user


def _may_judge(task, user: str) -> bool:
    """Whether this signed-in account judges the task on the assessor pages (organisers
    too only when the task lists them, or lists no one)."""
    return selectors.task_judged_by(task, user)


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
        ok, form = _submit(request, task, user, _item_intents(task))
        if ok:
            return redirect("judging:judge", name=task.name)
        ref = request.POST["ref"]
        item = selectors.task_item_get(task, ref_loads(ref)["i"])
        return render(request, "judging/judge.html", _page_context(
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
        return render(request, "judging/judge.html", _page_context(
            task, user, topic_id=item.topic_id, docid=item.docid, intents=intents,
            ref=_new_ref(task, item_id=item.pk, intents=intents), current=current,
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
    return render(request, "judging/judge.html", _page_context(
        task, user, topic_id=leased.topic_id, docid=leased.docid, intents=leased.intents,
        ref=_new_ref(task, item_id=leased.item_id, intents=leased.intents),
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


# --- organisers ---------------------------------------------------------------------------


@require_http_methods(["GET"])
def manage_list(request):
    rows = [{"task": t, "progress": selectors.task_progress_held(t)}
            for t in selectors.task_list()]
    return render(request, "judging/manage_list.html", {"rows": rows})


@require_http_methods(["GET"])
def manage_task(request, name):
    task = _task_or_404(name)
    progress = selectors.task_progress(task)
    try:
        collection = selectors.task_collection(task).name
    except ValueError:
        collection = ""
    crowd_links = (selectors.task_crowd_links(task, request.build_absolute_uri("/"))
                   if task.study_id else None)
    return render(request, "judging/manage_task.html", {
        "task": task, "total": _bar(progress["total"]),
        "topics": [{"topic_id": t, **_bar(e)} for t, e in progress["topics"].items()],
        "intents": selectors.task_intent_stats(task),
        "assessors": selectors.task_assessor_stats(task),
        "agreement": selectors.task_agreement(task),
        "gold": selectors.task_gold_accuracy(task),
        "collection": collection, "collection_form": CollectionForm(current=collection),
        "may_judge": _may_judge(task, request.user.get_username()),
        "publish_form": PublishForm() if not task.study_id else None,
        "crowd_links": crowd_links, "formats": selectors.EXPORT_FORMATS,
        "recall": analysis.task_recall_estimates(task),
        "stop_form": StopRuleForm(initial={"rule": task.stop_rule}),
    })


@require_POST
def manage_stop(request, name):
    """Set or clear the task's stopping rule."""
    task = _task_or_404(name)
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
    task = _task_or_404(name)
    try:
        services.topic_resume(task, request.POST.get("topic", ""))
    except ValueError as exc:
        return render(request, "judging/message.html", {"task": task, "message": str(exc)},
                      status=400)
    return redirect("judging:manage_task", name=name)


@require_POST
def manage_collection(request, name):
    task = _task_or_404(name)
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
    task = _task_or_404(name)
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
    task = _task_or_404(name)
    if fmt not in selectors.EXPORT_FORMATS:
        raise Http404("No such format.")
    aggregate = request.GET.get("aggregate", "majority")
    adhoc_intent = request.GET.get("adhoc_intent") or None
    response = HttpResponse(content_type="text/plain; charset=utf-8")
    try:
        if fmt == "raw":
            labelfiles.write_raw(response, selectors.raw_rows(task.judgment_set))
        else:
            labelfiles.write_qrels(response, selectors.qrels_lines(
                task.judgment_set, fmt, aggregate=aggregate, adhoc_intent=adhoc_intent))
    except ValueError as exc:
        return render(request, "judging/message.html", {"task": task, "message": str(exc)},
                      status=400)
    response["Content-Disposition"] = f'attachment; filename="{task.name}.{fmt}.txt"'
    return response


# --- crowd workers ----------------------------------------------------------------------------

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
        ok, form = _submit(request, task, name, _item_intents(task), crowd=True)
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
        ctx = _page_context(task, name, topic_id=gold.topic_id, docid=gold.docid,
                            intents=intents, ref=_new_ref(task, gold=(gold.topic_id, gold.docid),
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
        ctx = _page_context(task, name, topic_id=leased.topic_id, docid=leased.docid,
                            intents=leased.intents,
                            ref=_new_ref(task, item_id=leased.item_id, intents=leased.intents),
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
