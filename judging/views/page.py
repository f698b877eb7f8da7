"""One judging page and its submit, shared by the assessors' and the crowd's pages; the
topic texts and marked documents they show are kept per process (cachetools)."""
from __future__ import annotations

import secrets
import threading
import time

from cachetools import LRUCache, TTLCache, cached
from django.core import signing
from django.http import Http404

from .. import selectors, services
from ..docfields import statement_shown
from ..doctext import marked_segments, query_terms
from ..forms import JudgmentForm, ref_dumps, ref_loads


NEXT_KEYS = ("n", "Enter")
BACK_KEY = "b"
CANNOT_KEY = "x"
TOPIC_CACHE_SECONDS = 300  # a topic's statement, intents and query texts, per process
TOPICS_KEPT = 256
DOCUMENTS_KEPT = 512  # marked documents kept per process
EMPTY_PROGRESS = {"items": 0, "slots": 0, "done": 0, "leased": 0, "remaining": 0}


# --- shared: one judging page and its submit ---------------------------------------------


def task_or_404(name: str):
    try:
        return selectors.task_get(name)
    except ValueError:
        raise Http404("No such judging task.") from None


def bar(entry: dict) -> dict:
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


#: A topic's statement, intents and query texts, per process: they do not change while a
#: task is judged, and expire after ``TOPIC_CACHE_SECONDS`` (a process-local cache, not the
#: cache framework, so a page does not unpickle every query text of a topic).
_topics: TTLCache[str, dict] = TTLCache(maxsize=TOPICS_KEPT, ttl=TOPIC_CACHE_SECONDS)
_topics_lock = threading.Lock()  # threaded servers share this process's caches


@cached(_topics, key=lambda task, topic_id: _topic_key(task, topic_id, "topic"),
        lock=_topics_lock)
def _topic_info(task, topic_id: str) -> dict:
    """The topic's statement and intents and the query texts of its documents, kept in
    this process for a few minutes."""
    topic = selectors.task_topic(task, topic_id)
    return {"topic_id": topic.topic_id, "title": topic.title,
            "description": topic.description, "narrative": topic.narrative,
            "statements": [s.text for s in topic.statements.all()],
            "intents": {i.intent_id: i.description for i in topic.intents.all()},
            "queries": selectors.topic_query_texts(task, topic_id)}


#: The last ``DOCUMENTS_KEPT`` marked documents shown, per process (least recently shown
#: dropped first).
_documents: LRUCache[tuple, tuple] = LRUCache(maxsize=DOCUMENTS_KEPT)
_documents_lock = threading.Lock()


def _marked_document(task, topic: dict, docid: str) -> tuple[list, list, list]:
    """The document's title, fields and paragraphs with the query terms marked, kept in this
    process for the last ``DOCUMENTS_KEPT`` documents shown (an item is shown to K
    assessors, and again on every reload), so the index is not read again; a hit counts
    only while the collection is ready."""
    collection = selectors.task_collection(task)
    key = (task.pk, task.created, topic["topic_id"], collection.pk, collection.index_path,
           docid)
    with _documents_lock:
        hit = _documents.get(key)  # a hit counts as a use
        if hit is not None and collection.status == "ready":
            return hit
    doc = selectors.task_document(task, docid)
    terms = query_terms(topic["queries"].get(docid, []))
    marked = (marked_segments(doc.title, terms),
              [(label, marked_segments(text, terms)) for label, text in doc.fields],
              [marked_segments(p, terms) for p in doc.paragraphs])
    with _documents_lock:
        _documents[key] = marked
    return marked


def page_context(task, assessor: str, *, topic_id: str, docid: str, intents, ref: str,
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
        ctx["topic_progress"] = bar(task_progress["topics"].get(topic_id, EMPTY_PROGRESS))
        ctx["task_progress"] = bar(task_progress["total"])
        ctx["mine"] = mine or selectors.assessor_progress(task, assessor, pace=True)
    return ctx


def _seconds(ref: dict, js_seconds) -> float:
    """Time on page: the browser's count when given and plausible (no more than the
    server saw pass since it sent the page, plus a second), else the server's."""
    server = max(0.0, time.time() - float(ref["t"]))
    if js_seconds is not None and 0 <= js_seconds <= server + 1:
        return float(js_seconds)
    return server


def submit(request, task, assessor: str, intents_for, *, crowd: bool = False
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


def item_intents(task):
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


def new_ref(task, *, intents, **kw) -> str:
    return ref_dumps(task_id=task.pk, submit_key=secrets.token_urlsafe(18), shown=time.time(),
                     intents=list(intents), **kw)



def may_judge(task, user: str) -> bool:
    """Whether this signed-in account judges the task on the assessor pages (organisers
    too only when the task lists them, or lists no one)."""
    return selectors.task_judged_by(task, user)
