"""Crowd pages: the worker flow of a study, and the organisers' progress and exports.

Workers are identified by the browser session that arrived with their link; every page
after the entry resolves the participant from that session only, so no URL names another
worker's data. Organiser pages need a staff account.
"""
import csv
import json

from django.contrib.auth.decorators import user_passes_test
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from crowd import quality, selectors, services
from crowd.forms import AnswerForm, ConsentForm
from crowd.models import Assignment, Participant, Study, TopicSet
from crowd.spreadsheet import spreadsheet_row

staff_required = user_passes_test(lambda u: u.is_active and u.is_staff)


def _session_key(slug: str) -> str:
    return f"crowd.study.{slug}"


def _participant(request, slug: str) -> Participant:
    held = request.session.get(_session_key(slug))
    if not isinstance(held, dict) or "p" not in held or "t" not in held:
        raise Http404("No study in progress in this browser.")
    return selectors.participant_get_for_session(slug=slug, participant_id=held["p"], token=held["t"])


def _arrival(request):
    """(platform, worker id, external study id, external session id) from the URL or login."""
    q = request.GET
    if q.get("PROLIFIC_PID"):
        return Participant.PLATFORM_PROLIFIC, q["PROLIFIC_PID"], q.get("STUDY_ID", ""), q.get("SESSION_ID", "")
    if q.get("workerId"):
        return Participant.PLATFORM_MTURK, q["workerId"], q.get("hitId", ""), q.get("assignmentId", "")
    if request.user.is_authenticated:
        return Participant.PLATFORM_ACCOUNT, f"account:{request.user.get_username()}", "", ""
    return None


def _held_participant(request, slug: str) -> Participant | None:
    """The participant this browser session holds for the study, if any."""
    held = request.session.get(_session_key(slug))
    if not isinstance(held, dict) or "p" not in held or "t" not in held:
        return None
    try:
        return selectors.participant_get_for_session(slug=slug, participant_id=held["p"],
                                                     token=held["t"])
    except Http404:
        return None


@require_http_methods(["GET", "POST"])
def study_entry(request, slug):
    """The public link: Prolific or MTurk parameters, or a signed-in account.

    A browser already taking part as one worker is never silently handed to another
    worker id: the page says so, and only an explicit POST ("switch") replaces it.
    """
    study = selectors.study_get_by_slug(slug)
    if request.GET.get("assignmentId") == "ASSIGNMENT_ID_NOT_AVAILABLE":
        return render(request, "crowd/entry.html", {"study": study, "preview": True})
    arrival = _arrival(request)
    held = _held_participant(request, slug)
    if arrival is None:
        if held is not None:
            return redirect("crowd:study_next", slug=slug)
        return render(request, "crowd/entry.html", {"study": study, "preview": False})
    platform, worker_id, ext_study, ext_session = arrival
    if held is not None and held.worker_id != worker_id.strip():
        if request.method != "POST" or request.POST.get("switch") != "1":
            return render(request, "crowd/switch.html", {
                "study": study, "held": held, "worker_id": worker_id,
                "continue_url": reverse("crowd:study_next", kwargs={"slug": slug}),
            }, status=409)
        held = None  # the person asked to take part as the new worker id
    elif request.method == "POST":
        return redirect("crowd:study_next", slug=slug)
    try:
        p = services.participant_arrive(
            study=study, platform=platform, worker_id=worker_id,
            external_study_id=ext_study, external_session_id=ext_session,
            session_token=held.session_token if held is not None else "",
            user=request.user if platform == Participant.PLATFORM_ACCOUNT else None,
            submit_to=request.GET.get("turkSubmitTo", ""),
        )
    except services.StudyError as e:
        return render(request, "crowd/message.html", {"study": study, "message": str(e)}, status=403)
    request.session[_session_key(slug)] = {"p": p.pk, "t": p.session_token}
    return redirect("crowd:study_next", slug=slug)


@require_http_methods(["GET"])
def study_next(request, slug):
    """Send the worker to wherever they are: consent, their next item, or the end."""
    p = _participant(request, slug)
    if p.status == Participant.STATUS_ARRIVED:
        return redirect("crowd:study_consent", slug=slug)
    if p.status == Participant.STATUS_ACTIVE:
        pos = selectors.participant_next_position(p)
        if pos is not None:
            return redirect("crowd:study_item", slug=slug, position=pos)
    return redirect("crowd:study_done", slug=slug)


@require_http_methods(["GET", "POST"])
def study_consent(request, slug):
    p = _participant(request, slug)
    if p.status != Participant.STATUS_ARRIVED:
        return redirect("crowd:study_next", slug=slug)
    form = ConsentForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        services.participant_consent(participant=p)
        return redirect("crowd:study_next", slug=slug)
    return render(request, "crowd/consent.html", {"study": p.study, "form": form})


def _item_url(slug, position):
    if position is None:
        return reverse("crowd:study_done", kwargs={"slug": slug})
    return reverse("crowd:study_item", kwargs={"slug": slug, "position": position})


@require_http_methods(["GET", "POST"])
def study_item(request, slug, position):
    """One item per page. POST is idempotent: a repeat never adds a second answer."""
    p = _participant(request, slug)
    study = p.study
    if p.status != Participant.STATUS_ACTIVE:
        # finished (or not started): a repeated POST lands where the first one did
        return redirect("crowd:study_next" if p.status == Participant.STATUS_ARRIVED
                        else "crowd:study_done", slug=slug)
    form_kwargs = {"question": study.question_text, "choices": study.question_choice_list()}
    if request.method == "POST":
        form = AnswerForm(request.POST, **form_kwargs)
        if form.is_valid():
            try:
                result = services.response_submit(
                    participant_id=p.pk, position=position,
                    raw=form.cleaned_data["query"], estimate=form.cleaned_data.get("estimate", ""),
                )
            except Assignment.DoesNotExist:
                raise Http404("No such item.")
            if result.accepted or result.duplicate or result.out_of_order:
                return redirect(_item_url(slug, result.next_position))
            for code in result.problems:
                form.add_error("query", quality.MESSAGES[code])
    else:
        form = AnswerForm(**form_kwargs)
    assignments = selectors.participant_assignment_list(p)
    current = next((a for a in assignments if a.position == position), None)
    if current is None:
        raise Http404("No such item.")
    if request.method == "GET":
        first_open = next((a.position for a in assignments if not hasattr(a, "response")), None)
        if current.position != first_open:  # answered, or not yet its turn
            return redirect(_item_url(slug, first_open))
        services.assignment_mark_shown(current)
    return render(request, "crowd/item.html", {
        "study": study, "form": form, "assignment": current, "item": current.item,
        "number": assignments.index(current) + 1, "total": len(assignments),
    })


@require_http_methods(["GET"])
def study_done(request, slug):
    p = _participant(request, slug)
    if p.status in (Participant.STATUS_ARRIVED, Participant.STATUS_ACTIVE):
        return redirect("crowd:study_next", slug=slug)
    return render(request, "crowd/done.html", {"study": p.study, "participant": p})


# --- organisers -------------------------------------------------------------------------


@require_http_methods(["GET"])
def index(request):
    """The crowd section: topic sets and studies for organisers; how to take part otherwise."""
    staff = request.user.is_active and request.user.is_staff
    return render(request, "crowd/index.html", {
        "staff": staff,
        "topic_sets": selectors.topic_set_list() if staff else [],
        "studies": selectors.study_list() if staff else [],
    })


@staff_required
def topic_set_detail(request, pk):
    topic_set = get_object_or_404(TopicSet, pk=pk)
    return render(request, "crowd/topic_set.html", {
        "topic_set": topic_set, "topics": selectors.topic_summary_list(topic_set),
    })


@staff_required
def study_list(request):
    return render(request, "crowd/study_list.html", {"studies": selectors.study_list()})


@staff_required
def study_progress(request, pk):
    study = get_object_or_404(Study.objects.select_related("topic_set"), pk=pk)
    entry = request.build_absolute_uri(reverse("crowd:study_entry", kwargs={"slug": study.slug}))
    return render(request, "crowd/study_progress.html", {
        "study": study, "progress": selectors.study_progress(study), "entry_url": entry,
    })


@staff_required
def study_variants(request, pk):
    study = get_object_or_404(Study, pk=pk)
    return render(request, "crowd/study_variants.html", {
        "study": study, "topics": selectors.study_variant_summary(study),
    })


class _Echo:
    def write(self, value):
        return value


@staff_required
def study_export(request, pk, fmt):
    study = get_object_or_404(Study, pk=pk)
    rows = selectors.study_export_rows(study)
    name = f"study-{study.pk}-variants.{fmt}"
    if fmt == "json":
        resp = HttpResponse(json.dumps(list(rows), ensure_ascii=False, indent=1),
                            content_type="application/json; charset=utf-8")
    elif fmt in ("csv", "tsv"):
        writer = csv.DictWriter(_Echo(), fieldnames=selectors.STUDY_EXPORT_FIELDS,
                                delimiter="\t" if fmt == "tsv" else ",", lineterminator="\n")

        def lines():
            yield writer.writeheader()
            for row in rows:
                yield writer.writerow(spreadsheet_row(row))

        ctype = "text/tab-separated-values" if fmt == "tsv" else "text/csv"
        resp = StreamingHttpResponse(lines(), content_type=f"{ctype}; charset=utf-8")
    else:
        raise Http404("Unknown format.")
    resp["Content-Disposition"] = f'attachment; filename="{name}"'
    return resp
