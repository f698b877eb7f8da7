"""Organiser pages (staff): a project page per topic set and the forms that do in the browser
what the management commands do, through the same services.

Uploads go through :mod:`uploads.services`: a small file is imported in the request, a
large one (over ``UPLOAD_TASK_BYTES``, 5 MB by default) is recorded and imported by a
worker while a progress page waits. Errors name the file and line the organiser chose;
imports stay all or nothing because the services are.
"""
from __future__ import annotations

import io
import re

from django import forms
from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from common.trec import write_run
from common.webmessages import web_message
from crowd import selectors
from crowd.models import Study
from crowd.services import study_create
from evaluation.selectors import analysis_list
from judging.models import JudgingTask
from judging.selectors import judgment_set_list, task_export_formats, task_list, task_progress
from judging.services import SCALES, judging_task_create
from pooling.selectors import (
    POOL_EXPORT_FORMATS,
    pool_done_get,
    pool_export_write,
    pool_get,
    pool_list,
)
from projects.services import SYSTEM_RUN_SOURCES, project_pool_create, system_runs_launch
from retrieval.collections_io import FORMATS
from retrieval.models import Run
from retrieval.selectors import (
    collection_list,
    retrieval_model_list,
    run_get,
    run_list,
    run_rankings,
)
from retrieval.services import run_create
from topics import selectors as topics_selectors
from topics.models import TopicSet
from topics.selectors import variants_write
from topics.topicfiles import TOPIC_FORMATS
from topics.variantfiles import VARIANT_FORMATS
from uploads import services as uploads
from uploads.selectors import upload_get


def _topic_set_choices():
    return [(ts.name, ts.name) for ts in topics_selectors.topic_set_list()]


def _collection_choices():

    return [(c.name, c.name) for c in collection_list()]


def _model_choices():

    return [(m.name, m.name) for m in retrieval_model_list()]


def _pool_choices():

    return [(str(p.pk), p.label) for p in pool_list().filter(status="done")]


def _scale_choices():

    return [(k, k) for k in SCALES]


class _Choices(forms.Form):
    """A form whose select fields take their choices from the database when built."""

    dynamic: dict = {}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for field, source in self.dynamic.items():
            choices = source()
            if not self.fields[field].required:
                choices = [("", "—")] + choices
            self.fields[field].choices = choices


class TopicsUploadForm(_Choices):
    file = forms.FileField()
    format = forms.ChoiceField(choices=[(f, f) for f in TOPIC_FORMATS])
    topic_set = forms.ChoiceField(required=False, label="Existing topic set")
    new_topic_set = forms.CharField(required=False, max_length=100, label="or a new topic set")
    ids = forms.ChoiceField(choices=[("given", "as written in the file"),
                                     ("position", "1, 2, … by position")], initial="given")
    encoding = forms.CharField(initial="utf-8", max_length=40)
    replace = forms.BooleanField(required=False,
                                 help_text="overwrite topics already in the set (variants are kept)")
    dynamic = {"topic_set": _topic_set_choices}

    def clean(self):
        d = super().clean()
        name = (d.get("new_topic_set") or "").strip() or d.get("topic_set")
        if not name:
            raise forms.ValidationError("choose a topic set or name a new one")
        d["topic_set_name"] = name
        return d


class VariantsUploadForm(_Choices):
    file = forms.FileField()
    format = forms.ChoiceField(choices=[(f, f) for f in VARIANT_FORMATS])
    topic_set = forms.ChoiceField()
    encoding = forms.CharField(initial="utf-8", max_length=40)
    create_topics = forms.BooleanField(required=False)
    replace = forms.BooleanField(required=False)
    dynamic = {"topic_set": _topic_set_choices}


class RunUploadForm(_Choices):
    file = forms.FileField(help_text="TREC run: qid Q0 docid rank score tag (.gz accepted)")
    topic_set = forms.ChoiceField()
    tag = forms.CharField(required=False, max_length=100, help_text="defaults to the file's tag")
    encoding = forms.CharField(initial="utf-8", max_length=40)
    dynamic = {"topic_set": _topic_set_choices}


class QrelsUploadForm(_Choices):
    file = forms.FileField()
    format = forms.ChoiceField(choices=[
        ("adhoc", "ad hoc: topic iter docid rel"),
        ("diversity", "diversity: topic subtopic docid rel"),
        ("smart", "SMART: query docid … (every listed pair relevant; CACM qrels.text, CISI/ADI .REL)"),
        ("cranqrel", "Cranfield cranqrel: query docid code (grade 5 − code)")])
    name = forms.CharField(max_length=100)
    topic_set = forms.ChoiceField(required=False, help_text="check every topic id is in this set")
    id_map = forms.ChoiceField(required=False, choices=[("", "—"), ("strip-zeros", "strip-zeros")],
                               help_text="strip-zeros: topic 01 becomes 1 (CACM's qrels)")
    encoding = forms.CharField(initial="utf-8", max_length=40)
    dynamic = {"topic_set": _topic_set_choices}


def _collection_formats():

    return [(f, f) for f in FORMATS]


class CollectionUploadForm(_Choices):
    file = forms.FileField(help_text="jsonl ({id, contents} a line), TREC <DOC> or SMART (.I/.W); .gz accepted")
    name = forms.CharField(max_length=100)
    format = forms.ChoiceField()
    encoding = forms.CharField(initial="utf-8", max_length=40)
    skip_empty = forms.BooleanField(required=False,
                                    help_text="leave out documents with nothing to index (else an error)")
    dynamic = {"format": _collection_formats}


class StudyForm(_Choices):
    """What ``create_study`` takes: the study, what workers see, checks, platform ids."""

    topic_set = forms.ChoiceField()
    name = forms.CharField(max_length=200, help_text="internal name (organisers only)")
    title = forms.CharField(max_length=200, required=False,
                            help_text="the title workers see (empty: “Search queries study”)")
    instructions = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 4}),
                                   help_text="shown to workers")
    consent_text = forms.CharField(widget=forms.Textarea)
    completion_code = forms.CharField(max_length=100)
    responses_per_statement = forms.IntegerField(min_value=1, initial=10)
    statements_per_worker = forms.IntegerField(min_value=1, initial=10)
    min_seconds_per_answer = forms.FloatField(min_value=0, initial=5.0, required=False,
                                              label="Minimum seconds per answer",
                                              help_text="empty: 5")
    attention_checks = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}),
        help_text="one PROMPT=ANSWER a line, e.g. “Ignore the description and type the word "
                  "purple.=purple”")
    prolific_study_id = forms.CharField(required=False, max_length=200)
    mturk_hit_ids = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}),
                                    label="MTurk HIT ids",
                                    help_text="refuse MTurk arrivals from other HITs; one a line")
    dynamic = {"topic_set": _topic_set_choices}

    def clean_attention_checks(self):
        checks = []
        for n, line in enumerate(self.cleaned_data["attention_checks"].splitlines(), start=1):
            if not line.strip():
                continue
            prompt, sep, answer = line.rpartition("=")
            if not sep or not prompt.strip() or not answer.strip():
                raise forms.ValidationError(f"line {n}: give PROMPT=ANSWER, not {line.strip()!r}")
            checks.append((prompt.strip(), answer.strip()))
        return checks

    def clean_mturk_hit_ids(self):
        return "\n".join(h for h in re.split(r"[\s,]+", self.cleaned_data["mturk_hit_ids"]) if h)


class RetrievalForm(_Choices):
    topic_set = forms.ChoiceField()
    collection = forms.ChoiceField()
    model = forms.ChoiceField()
    source = forms.ChoiceField(choices=[("titles", "topic titles"), ("descriptions", "topic descriptions"),
                                        ("variants", "user query variants")])
    depth = forms.IntegerField(min_value=1, max_value=10000, initial=1000)
    system_runs = forms.BooleanField(
        required=False, label="Also run the model over titles as system runs",
        help_text="over the topic titles (and descriptions, where the topics have them): "
                  "once finished, choose them as system runs when building a pool")
    dynamic = {"topic_set": _topic_set_choices, "collection": _collection_choices,
               "model": _model_choices}


def _order_choices():

    return JudgingTask.ORDER_CHOICES


class JudgingTaskForm(_Choices):
    pool = forms.ChoiceField(help_text="a finished pool")
    name = forms.CharField(max_length=100)
    mode = forms.ChoiceField(choices=[("intent", "intent"), ("topic", "topic"), ("user", "user"),
                                      ("sample", "sample (estimate the measures from a sample)")],
                             initial="topic")
    scale = forms.ChoiceField()
    order = forms.ChoiceField(choices=_order_choices, initial="pool", required=False,
                              help_text="the order documents are judged in (empty: the pool's)")
    redundancy = forms.IntegerField(
        min_value=1, required=False, label="K (redundancy)",
        help_text="assessors per document; empty: 1 (leave it empty in user mode, where every "
                  "writer of a topic judges its documents)")
    per_topic = forms.IntegerField(min_value=1, required=False)
    sample_budget = forms.CharField(
        required=False, max_length=20, label="sample budget",
        help_text="sample mode: documents per topic (e.g. 60) or a share of each topic's pool "
                  "(e.g. 20%)")
    strata = forms.CharField(
        required=False, max_length=200,
        help_text="sample mode: depth:10,20,50 (by the shallowest rank; the default) or rbp:4 "
                  "(strata of equal RBP prior weight)")
    seed = forms.IntegerField(required=False, min_value=0, help_text="sample mode: the draw's seed (0)")
    assessors = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}),
                                help_text="user names, one a line or comma-separated; empty: anyone signed in")
    dynamic = {"pool": _pool_choices, "scale": lambda: _scale_choices()}

    def clean_assessors(self):
        return [a for a in re.split(r"[\s,]+", self.cleaned_data["assessors"]) if a]


def _system_run_choices(topic_set_name: str):
    """The finished system runs of a topic set and its finished title and description runs
    (which become system runs when chosen)."""

    choices = []
    for run in run_list(topic_set_name).filter(status="done").order_by("pk"):
        if run.kind == Run.KIND_SYSTEM:
            choices.append((str(run.pk), f"system run {run.tag}"))
        elif run.source in SYSTEM_RUN_SOURCES:
            # a run imported without a model or collection has neither to name
            model = run.model.name if run.model_id else "a model"
            where = f" of {run.collection.name}" if run.collection_id else ""
            choices.append((str(run.pk), f"{model} over {run.source}{where} (run {run.pk})"))
    return choices


class ProjectPoolForm(_Choices):
    """A pool of one topic set, with the system runs it takes chosen by the organiser."""

    sources = forms.ChoiceField(choices=[("users", "users"), ("systems", "systems"),
                                         ("combined", "combined")])
    strategy = forms.ChoiceField(choices=[("depth", "depth: shallowest rank first"),
                                          ("rbp", "rbp: heaviest RBP weight first")])
    depth = forms.IntegerField(min_value=1, initial=100)
    model = forms.ChoiceField(required=False, help_text="of the user-variant rankings")
    collection = forms.ChoiceField(required=False, help_text="of the user-variant rankings")
    system_runs = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple,
        help_text="the system runs of a systems or combined pool (empty: every system run); "
                  "a title or description run chosen here is kept as a system run")
    name = forms.CharField(max_length=100, required=False)
    dynamic = {"collection": _collection_choices, "model": _model_choices}

    def __init__(self, *args, topic_set_name: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["system_runs"].choices = _system_run_choices(topic_set_name)


def _upload(request, kind, params, *, background=False):
    """Import a small file in the request; record a large one (or any collection, which
    builds an index) and show its progress page."""

    upload = params.pop("file")
    if background or upload.size > uploads.task_threshold():
        row = uploads.upload_create(kind, upload, params, created_by=request.user.get_username())
        messages.info(request, f"{row.filename} ({row.size} bytes) is being imported by a worker")
        return redirect("projects:organiser_upload_status", pk=row.pk)
    result = uploads.file_import(kind, upload, params)
    messages.success(request, f"{result['message']} from {upload.name}")
    if result.get("topic_set"):
        return _to_project(result["topic_set"])
    return redirect("pooling:qrels_detail", name=result["qrels"])


@require_http_methods(["GET", "POST"])
def collection_upload(request):
    def action(d, request):
        return _upload(request, "collection", dict(d), background=True)
    return _form_page(request, CollectionUploadForm, "Upload a collection", action)


def upload_status(request, pk):
    """A background import: its state, a progress bar while it waits or runs, its error."""


    try:
        row = upload_get(pk)
    except ValueError:
        raise Http404(f"no upload with id {pk}") from None
    project = None
    topic_set = (row.result or {}).get("topic_set") or row.params.get("topic_set")
    if topic_set:
        found = topics_selectors.topic_set_list().filter(name=topic_set).first()
        project = found.pk if found else None
    return render(request, "projects/organiser_upload_status.html", {
        "upload": row, "project": project,
        "active": row.status in ("queued", "running")})


def _form_page(request, form_class, title, action, template="projects/organiser_form.html",
               extra=None):
    form = form_class(request.POST or None, request.FILES or None,
                      initial={k: v for k, v in request.GET.items()})
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                done = action(form.cleaned_data, request)
            except ValueError as exc:
                form.add_error(None, web_message(exc))
            else:
                return done
        status = 400
    return render(request, template, {"form": form, "title": title, **(extra or {})},
                  status=status)


@require_http_methods(["GET", "POST"])
def topics_upload(request):
    def action(d, request):
        return _upload(request, "topics", {
            "file": d["file"], "topic_set": d["topic_set_name"], "format": d["format"],
            "ids": d["ids"], "encoding": d["encoding"], "replace": d["replace"]})
    return _form_page(request, TopicsUploadForm, "Upload topics", action)


@require_http_methods(["GET", "POST"])
def variants_upload(request):
    def action(d, request):
        return _upload(request, "variants", dict(d))
    return _form_page(request, VariantsUploadForm, "Upload query variants", action)


@require_http_methods(["GET", "POST"])
def run_upload(request):
    def action(d, request):
        return _upload(request, "run", dict(d))
    return _form_page(request, RunUploadForm, "Upload a system run", action)


@require_http_methods(["GET", "POST"])
def qrels_upload(request):
    def action(d, request):
        return _upload(request, "qrels", dict(d))
    return _form_page(request, QrelsUploadForm, "Upload qrels", action)


@require_http_methods(["GET", "POST"])
def study_new(request):
    def action(d, request):
        study = study_create(
            topic_set=topics_selectors.topic_set_get(d["topic_set"]), name=d["name"],
            consent_text=d["consent_text"], completion_code=d["completion_code"],
            responses_per_statement=d["responses_per_statement"],
            statements_per_worker=d["statements_per_worker"],
            prolific_study_id=d["prolific_study_id"].strip(), title=d["title"].strip(),
            instructions=d["instructions"], min_seconds_per_answer=(5.0 if d["min_seconds_per_answer"] is None
                                    else d["min_seconds_per_answer"]),
            attention_checks=d["attention_checks"], mturk_hit_ids=d["mturk_hit_ids"])
        messages.success(request, f"study {study.name!r} created")
        return redirect("projects:organiser_study_links", pk=study.pk)
    return _form_page(request, StudyForm, "Create a study", action)


def study_links(request, pk):


    study = get_object_or_404(Study.objects.select_related("topic_set"), pk=pk)
    entry = request.build_absolute_uri(reverse("crowd:study_entry", kwargs={"slug": study.slug}))
    links = [
        ("prolific", "Prolific (study URL)",
         entry + selectors.PROLIFIC_QUERY),
        ("mturk", "MTurk (ExternalQuestion URL)", entry),
        ("direct", "Signed-in accounts", entry),
    ]
    return render(request, "projects/organiser_study_links.html", {"study": study, "links": links})


@require_http_methods(["GET", "POST"])
def retrieval_launch(request):

    def action(d, request):

        run = run_create(topic_set_name=d["topic_set"], collection_name=d["collection"],
                         model_name=d["model"], depth=d["depth"], source=d["source"])
        messages.success(request, f"run {run.id} queued ({run.total} queries)")
        if d["system_runs"]:
            extra = system_runs_launch(topic_set_name=d["topic_set"],
                                       collection_name=d["collection"], model_name=d["model"],
                                       depth=d["depth"], skip=d["source"])
            kept = [run] if d["source"] in ("titles", "descriptions") else []
            for r in kept + extra:
                messages.info(request, f"run {r.id} over {r.source}: choose it as a system run "
                                       "when building a pool, once it is done")
        return redirect("retrieval:run_detail", run_id=run.id)
    return _form_page(request, RetrievalForm, "Launch retrieval", action)


@require_http_methods(["GET", "POST"])
def judging_task_new(request):

    def action(d, request):
        task = judging_task_create(
            pool=pool_get(int(d["pool"])), name=d["name"], mode=d["mode"], scale=d["scale"],
            order=d["order"] or "pool", redundancy=d["redundancy"], per_topic=d["per_topic"], assessors=d["assessors"],
            sample_strata=d["strata"] or None, sample_budget=d["sample_budget"] or None,
            sample_seed=d["seed"] or 0)
        messages.success(request, f"judging task {task.name!r} created")
        return redirect("judging:manage_task", name=task.name)
    return _form_page(request, JudgingTaskForm, "Create a judging task", action)


@require_http_methods(["GET", "POST"])
def pool_build(request, pk):
    """Build a pool of the project's topic set, taking the system runs the organiser chose
    (title and description runs among them)."""


    topic_set = get_object_or_404(TopicSet, pk=pk)

    def form_class(*args, **kwargs):
        return ProjectPoolForm(*args, topic_set_name=topic_set.name, **kwargs)

    def action(d, request):
        pool = project_pool_create(
            topic_set_name=topic_set.name, sources=d["sources"], strategy=d["strategy"],
            depth=d["depth"], model_name=d["model"] or None,
            collection_name=d["collection"] or None, name=d["name"] or None,
            system_runs=[int(i) for i in d["system_runs"]] or None)
        messages.success(request, f"pool {pool.label} queued")
        return redirect("pooling:pool_detail", ref=pool.pk)
    return _form_page(request, form_class, f"Build a pool of {topic_set.name}", action)


def _to_project(topic_set_name):
    ts = topics_selectors.topic_set_get(topic_set_name)
    return redirect("projects:organiser_project", pk=ts.pk)


def project(request, pk):
    """Where a topic set stands: topics, statements, variants, runs, pools, judging, qrels,
    evaluations, each from its own app's selectors."""


    topic_set = get_object_or_404(TopicSet, pk=pk)
    stats = topics_selectors.variant_stats(topic_set.name)
    pools = list(pool_list(topic_set.name).order_by("-pk"))
    pool_ids = {p.pk for p in pools}
    tasks = [t for t in task_list() if t.pool_id in pool_ids]
    for t in tasks:
        t.progress = task_progress(t)["total"]
        t.qrels_format = task_export_formats(t.mode)[0]  # adhoc, or diversity per intent
    analyses = [a for a in analysis_list().order_by("-pk")[:200]
                if a.params.get("topic_set") == topic_set.name]
    studies = [s for s in selectors.study_list() if s.topic_set_id == topic_set.pk]
    return render(request, "projects/organiser_project.html", {
        "topic_set": topic_set, "stats": stats,
        "n_statements": topic_set.statements_count,
        "studies": studies,
        "runs": list(run_list(topic_set.name).order_by("-pk")),
        "pools": pools, "tasks": tasks, "qrels": list(judgment_set_list(topic_set).order_by("name")),
        "analyses": analyses,
        "pool_form": ProjectPoolForm(topic_set_name=topic_set.name),
    })


def run_export(request, run_id):
    """The run as a TREC run file (the export_run command's writer)."""

    run = run_get(run_id)
    out = io.StringIO()
    write_run(out, run_rankings(run), run.tag or f"{run.model.name}-{run.source}")
    return _download(out.getvalue(), f"run-{run.id}.txt")


def pool_export(request, ref, fmt):
    """The pool as the export_pool command writes it (txt, csv or trec)."""

    if fmt not in POOL_EXPORT_FORMATS:
        return HttpResponse("format must be txt, csv or trec", status=404, content_type="text/plain")
    out = io.StringIO()
    try:
        pool_export_write(out, pool_done_get(ref), fmt)
    except ValueError as exc:  # the pool is unknown or not finished
        return HttpResponse(str(exc), status=404, content_type="text/plain")
    return _download(out.getvalue(), f"pool-{ref}.{fmt}")


def variants_export(request, pk, fmt):
    """Every variant of the topic set as the export_variants command writes it."""

    ts = TopicSet.objects.get(pk=pk)
    out = io.StringIO()
    variants_write(out, ts.name, fmt)
    # as a text file read back: line ends are "\n" (the csv writer's "\r\n" included)
    text = out.getvalue().replace("\r\n", "\n").replace("\r", "\n")
    return _download(text, f"{ts.name}-variants.{fmt}")


#: the media type of a download by its file name's extension
_MEDIA_TYPES = {"json": "application/json", "csv": "text/csv",
                "tsv": "text/tab-separated-values"}


def _download(text: str, filename: str) -> HttpResponse:
    media = _MEDIA_TYPES.get(filename.rsplit(".", 1)[-1], "text/plain")
    response = HttpResponse(text, content_type=f"{media}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
