"""Crowd pages: the worker flow of a study, and the organisers' progress and exports.

Workers are identified by the browser that arrived with their link (a signed cookie holding
the participant's secret token); every page after the entry resolves the participant from
that cookie only, so no URL names another
worker's data. Organiser pages need a staff account (the table in common.roles).
"""
import json

from django.conf import settings
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.encoding import escape_uri_path
from django.views.decorators.http import require_http_methods

from common.spreadsheet import spreadsheet_writer, tsv_writer
from crowd import quality, selectors, services
from crowd.forms import AnswerForm, ConsentForm
from crowd.models import Assignment, Participant, Study
from topics import selectors as topics_selectors


# A worker's browser holds "participant id.token" in a signed cookie scoped to the study's
# own path: no session row is read or written on a worker's requests.
_HOLD_SALT = "crowd.participant"


def _hold_cookie(slug: str) -> str:
    return f"crowd_{slug}"


def _held(request, slug: str) -> tuple[int, str] | None:
    """(participant id, token) this browser holds for the study, or None."""
    value = request.get_signed_cookie(_hold_cookie(slug), default=None, salt=_HOLD_SALT)
    pid, _, token = (value or "").partition(".")
    if not pid.isdigit() or not token:
        return None
    return int(pid), token


def _hold(response, slug: str, participant: Participant):
    response.set_signed_cookie(
        _hold_cookie(slug), f"{participant.pk}.{participant.session_token}", salt=_HOLD_SALT,
        max_age=settings.SESSION_COOKIE_AGE, path=reverse("crowd:study_entry", kwargs={"slug": slug}),
        secure=settings.SESSION_COOKIE_SECURE, httponly=True, samesite=settings.SESSION_COOKIE_SAMESITE,
    )
    return response


def _participant(request, slug: str) -> Participant:
    held = _held(request, slug)
    if held is None:
        raise Http404("No study in progress in this browser.")
    return selectors.participant_get_for_session(slug=slug, participant_id=held[0], token=held[1])


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
    """The participant this browser holds for the study, if any."""
    try:
        return _participant(request, slug)
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
    # straight to where the worker is (one redirect fewer for a new arrival)
    target = "crowd:study_consent" if p.status == Participant.STATUS_ARRIVED else "crowd:study_next"
    return _hold(redirect(target, slug=slug), slug, p)


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
    form = ConsentForm(request.POST if request.method == "POST" else None)
    if form.is_bound and form.is_valid():
        p = services.participant_consent(participant=p)
        if p.status == Participant.STATUS_ACTIVE:  # items are numbered from 1
            return redirect(_item_url(slug, 1))
        if p.status == Participant.STATUS_FULL:  # nothing left to hand out
            return redirect("crowd:study_done", slug=slug)
        return redirect("crowd:study_next", slug=slug)
    return render(request, "crowd/consent.html", {
        "study": p.study, "agree_label": form.fields["agree"].label,
        "agree_errors": form.errors.get("agree", ()) if form.is_bound else (),
    })


def _item_url(slug, position):
    if position is None:
        return reverse("crowd:study_done", kwargs={"slug": slug})
    return reverse("crowd:study_item", kwargs={"slug": slug, "position": position})


@require_http_methods(["GET", "POST"])
def study_item(request, slug, position):
    """One item per page. POST is idempotent: a repeat never adds a second answer.

    The hot path of a study: a GET reads the worker's items and starts the item's clock in
    one statement (two on SQLite); a POST is one service call that checks the browser's
    token under the worker's row lock. Neither touches a session row, and neither builds a
    Django form unless an answer is refused (the page writes the fields itself:
    ``crowd/item.html``; tests/crowd/test_worker_fields.py compares them with the form's).
    """
    held = _held(request, slug)
    if held is None:
        raise Http404("No study in progress in this browser.")
    if request.method == "POST":
        return _study_item_post(request, slug, position, held)
    # the page, and the item's clock started when this is its first showing
    page = services.item_page_show(slug=slug, participant_id=held[0], token=held[1], position=position)
    if page is None:  # not consented, nothing to do, or not this browser's worker
        p = _participant(request, slug)
        return redirect("crowd:study_next" if p.status == Participant.STATUS_ARRIVED
                        else "crowd:study_done", slug=slug)
    if page.status != Participant.STATUS_ACTIVE:
        return redirect("crowd:study_done", slug=slug)
    current = next((row for row in page.items if row.position == position), None)
    if current is None:
        raise Http404("No such item.")
    first_open = next((row.position for row in page.items if not row.answered), None)
    if current.position != first_open:  # answered, or not yet its turn
        return redirect(_item_url(slug, first_open))
    return _render_item(request, page, current)


def _render_item(request, page, current, *, values=None, errors=None):
    """The item page; ``values``/``errors``: what the worker posted and why it was refused
    (field name -> value, field name -> messages)."""
    values, errors = values or {}, errors or {}
    number = page.items.index(current) + 1
    return render(request, "crowd/item.html", {
        "study": page.study, "item": current, "number": number,
        # plain text, not numbers the template would localise; the form posts back to
        # this page's own address (both: the hot path of a study)
        "progress": f"{number} of {len(page.items)}", "action": escape_uri_path(request.path),
        "choices": page.study.question_choice_list(),
        "query": values.get("query", ""), "estimate": values.get("estimate", ""),
        "query_errors": errors.get("query", ()), "estimate_errors": errors.get("estimate", ()),
        "non_field_errors": errors.get("__all__", ()),
    })


def _study_item_post(request, slug, position, held):
    try:
        result = services.response_submit(
            participant_id=held[0], session_token=held[1], study_slug=slug, position=position,
            raw=request.POST.get("query", ""), estimate=request.POST.get("estimate", ""),
        )
    except (Participant.DoesNotExist, Assignment.DoesNotExist):
        raise Http404("No such item.")
    if result.status == Participant.STATUS_ARRIVED:
        return redirect("crowd:study_next", slug=slug)
    if result.accepted or result.duplicate or result.out_of_order:
        return redirect(_item_url(slug, result.next_position))
    # refused: show the same item again with the reasons (the form's own checks first)
    page = selectors.participant_item_page(slug=slug, participant_id=held[0], token=held[1])
    study = page.study
    form = AnswerForm(request.POST, question=study.question_text,
                      choices=study.question_choice_list())
    form.is_valid()
    for code in result.problems:
        if code != quality.ESTIMATE:
            form.add_error("query", quality.MESSAGES[code])
        elif "estimate" in form.fields and not form.errors.get("estimate"):
            form.add_error("estimate", quality.MESSAGES[code])
    current = next(row for row in page.items if row.position == position)
    values = {name: form[name].value() or "" for name in form.fields}
    return _render_item(request, page, current, values=values, errors=form.errors)


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
        "topic_sets": topics_selectors.topic_set_list() if staff else [],
        "studies": selectors.study_list() if staff else [],
    })


def study_list(request):
    return render(request, "crowd/study_list.html", {"studies": selectors.study_list()})


def study_progress(request, pk):
    study = get_object_or_404(Study.objects.select_related("topic_set"), pk=pk)
    entry = request.build_absolute_uri(reverse("crowd:study_entry", kwargs={"slug": study.slug}))
    return render(request, "crowd/study_progress.html", {
        "study": study, "progress": selectors.study_progress(study), "entry_url": entry,
    })


def study_variants(request, pk):
    study = get_object_or_404(Study, pk=pk)
    return render(request, "crowd/study_variants.html", {
        "study": study, "topics": selectors.study_variant_summary(study),
    })


class _Echo:
    def write(self, value):
        return value


def study_export(request, pk, fmt):
    study = get_object_or_404(Study, pk=pk)
    rows = selectors.study_export_rows(study)
    name = f"study-{study.pk}-variants.{fmt}"
    if fmt == "json":
        resp = HttpResponse(json.dumps(list(rows), ensure_ascii=False, indent=1),
                            content_type="application/json; charset=utf-8")
    elif fmt in ("csv", "tsv"):
        # csv for spreadsheets (formulas neutralised), tsv for scripts (text exactly)
        writer = (tsv_writer if fmt == "tsv" else spreadsheet_writer)(
            _Echo(), selectors.STUDY_EXPORT_FIELDS)

        def lines():
            yield writer.writeheader()
            for row in rows:
                yield writer.writerow(row)

        ctype = "text/tab-separated-values" if fmt == "tsv" else "text/csv"
        resp = StreamingHttpResponse(lines(), content_type=f"{ctype}; charset=utf-8")
    else:
        raise Http404("Unknown format.")
    resp["Content-Disposition"] = f'attachment; filename="{name}"'
    return resp
