"""Pages of the evaluation app (staff only): a form per analysis, which records the
analysis and queues it; a page per analysis with its progress, or its tables and figures
(SVG inline; PNG, PDF, SVG and the CSV behind each to download), or its error."""
from __future__ import annotations

import json

from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from common import figures

from . import reports, selectors, services
from .forms import FORMS
from .models import Analysis

TABLE_ROWS = 500  # rows shown on a page; the CSV has them all

DESCRIPTIONS = {
    "evaluate": "Score stored system runs with a judgment set or imported qrels (trec_eval, ndeval and "
                "NTCIREVAL conventions, as the evaluate command).",
    "agreement": "Cohen's and Fleiss' κ, Krippendorff's α and the Jaccard similarity of assessors' relevant "
                 "sets, per intent, per topic and overall.",
    "intents": "Coherence, distinctness, plausibility and completeness of a topic set's intents "
               "(Radlinski, Szummer & Craswell 2010), with curves over β.",
    "rank_correlation": "Kendall's τ_b and τ_ap between the system orderings under two judgment sets, and "
                        "optionally the agreement of their significant differences (randomised Tukey HSD).",
    "variance": "REML variance components of per-intent scores, the variance of the mean for N queries "
                "× M intents under a fixed budget, per-topic τ between intents and the τ of subsampled "
                "collections.",
    "variability": "The spread of a measure over users' query variants next to its spread over systems, per "
                   "topic, and the variance components of the variants' scores.",
}


def _analysis_or_404(pk: int) -> Analysis:
    try:
        return selectors.analysis_get(pk)
    except ValueError:
        raise Http404(f"no analysis {pk}") from None


def _kind_or_404(kind: str) -> str:
    if kind not in FORMS:
        raise Http404(f"no analysis kind {kind}")
    return kind


def index(request):
    kinds = [(k, label, DESCRIPTIONS[k]) for k, label in Analysis.KIND_CHOICES]
    return render(request, "evaluation/index.html",
                  {"kinds": kinds, "analyses": selectors.analysis_list()[:100]})


@require_http_methods(["GET", "POST"])
def analysis_new(request, kind):
    kind = _kind_or_404(kind)
    form = FORMS[kind](request.POST or None, initial=request.GET.dict())  # a link may preset it
    if request.method == "POST" and form.is_valid():
        analysis = services.analysis_create(kind, form.params(), created_by=request.user.get_username())
        return redirect("evaluation:analysis_detail", pk=analysis.pk)
    return render(request, "evaluation/new.html",
                  {"form": form, "kind": kind, "label": dict(Analysis.KIND_CHOICES)[kind],
                   "description": DESCRIPTIONS[kind], "command": reports.COMMANDS[kind]})


def analysis_detail(request, pk):
    analysis = _analysis_or_404(pk)
    ctx = {"analysis": analysis, "command": reports.COMMANDS[analysis.kind],
           "params": reports.param_rows(analysis.params)}
    if analysis.status == "done":
        tables, plots = reports.present(analysis.kind, analysis.result)
        ctx["tables"] = [(n, t.title, t.heads(), t.display()[:TABLE_ROWS], len(t.rows))
                         for n, t in enumerate(tables)]
        ctx["table_rows"] = TABLE_ROWS
        ctx["plots"] = [(name, p.title, figures.svg_inline(p.figure(), title=p.title)) for name, p in plots.items()]
    return render(request, "evaluation/detail.html", ctx)


def _done_or_404(pk) -> Analysis:
    analysis = _analysis_or_404(pk)
    if analysis.status != "done":
        raise Http404(f"analysis {pk} has no result yet ({analysis.status})")
    return analysis


def _attachment(body, content_type: str, filename: str) -> HttpResponse:
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def analysis_json(request, pk):
    analysis = _done_or_404(pk)
    return _attachment(json.dumps(analysis.result), "application/json",
                       f"{analysis.kind}-{analysis.pk}.json")


def analysis_table_csv(request, pk, n):
    analysis = _done_or_404(pk)
    tables, _ = reports.present(analysis.kind, analysis.result)
    if not 0 <= n < len(tables):
        raise Http404(f"analysis {pk} has no table {n}")
    table = tables[n]
    return _attachment(figures.csv_text(table.dict_rows(), table.columns), figures.FORMATS["csv"],
                       f"{analysis.kind}-{analysis.pk}-table{n}.csv")


def analysis_figure(request, pk, name, fmt):
    analysis = _done_or_404(pk)
    if fmt not in figures.FORMATS:
        raise Http404(f"no figure format {fmt}")
    _, plots = reports.present(analysis.kind, analysis.result)
    if name not in plots:
        raise Http404(f"analysis {pk} has no figure {name}")
    plot = plots[name]
    body = (figures.csv_text(plot.rows) if fmt == "csv" else figures.render(plot.figure(), fmt))
    return _attachment(body, figures.FORMATS[fmt], f"{analysis.kind}-{analysis.pk}-{name}.{fmt}")
