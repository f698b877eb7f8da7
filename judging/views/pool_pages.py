"""The pages under /pooling/ that read judgments as well as pools: a pool's page with its
coverage by a judgment set, the qrels pages, and the seed paper's figures and tables.

Qrels are judgment sets (an imported qrels file is one); these pages live here, in the
app that reads both pools and judgment sets, and hand the pooling analyses the judgments as
plain records (:func:`judging.selectors.qrels_records`). ``config.urls`` mounts them with
the pooling pages, under the same ``pooling`` names and addresses. A pool's menu of
judgment sets lists only those of the pool's topic set, and the paper gallery's only those
of the topic set chosen on it.
"""
from __future__ import annotations

from django import forms
from django.http import Http404
from django.shortcuts import render

from common import figures
from common.figure_pages import PagePlot, attachment
from common.webmessages import web_message
from pooling import analysis, paper
from pooling import figures as paper_figures
from pooling import selectors as pooling_selectors
from pooling.models import Pool
from pooling.views import (
    NameSelects,
    bound_with_defaults,
    int_list,
    pool_or_404,
    render_with_figures,
)

from .. import selectors
from ..forms import JudgmentSetField, topic_set_named


def _qrels_choices(topic_set=None):
    """A blank, then the judgment sets (of ``topic_set`` when given)."""
    names = selectors.judgment_set_list(topic_set).values_list("name", flat=True)
    return [("", "—")] + [(n, n) for n in names]


def qrels_list(request):
    """Every judgment set, imported qrels and task sets alike, with its topic set."""
    return render(request, "pooling/qrels_list.html", {
        "qrels": selectors.judgment_set_list().select_related("topic_set"),
    })


def qrels_detail(request, name):
    try:
        qrels = selectors.qrels_get(name)
    except ValueError:
        raise Http404(f"no qrels {name}") from None
    return render(
        request, "pooling/qrels_detail.html",
        {"qrels": qrels, "stats": selectors.qrels_summary(qrels)},
    )


class PoolQrelsForm(forms.Form):
    qrels = forms.ChoiceField(required=False, choices=())
    topic = forms.CharField(max_length=100, required=False,
                            help_text="draw one topic's documents (default: every topic)")

    def __init__(self, *args, topic_set=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["qrels"].choices = _qrels_choices(topic_set)


def pool_detail(request, ref):
    pool = pool_or_404(ref)
    form = PoolQrelsForm(request.GET or None, topic_set=pool.topic_set)
    summary = pooling_selectors.pool_size_summary(pool)
    ctx = {"pool": pool, "form": form, "summary": summary,
           "runs": pooling_selectors.pool_run_list(pool)}
    plots = {}
    sizes = summary["sizes"]
    if sizes:
        plots["sizes"] = PagePlot(
            "Pool size per topic", [{"topic": t, "documents": n} for t, n in sizes.items()],
            lambda rows: paper_figures.pool_size_figure(rows))
    qrels_name = form.cleaned_data.get("qrels") if form.is_valid() else ""
    topic = (form.cleaned_data.get("topic") or None) if form.is_valid() else None
    if qrels_name and pool.status == pool.STATUS_DONE:
        qrels = selectors.qrels_get(qrels_name)
        records = selectors.qrels_records(qrels, topic_ids=sizes)
        ctx["qrels"] = qrels
        ctx["coverage"] = analysis.pool_coverage(pool, records)
        try:
            rows = paper.rank_weight_rows(pool, records, topic_id=topic)
        except ValueError as exc:
            form.add_error("topic", web_message(exc))
            rows = []
        rows = [r for r in rows if r["min_rank"] > 0]
        if rows:
            ctx["scatter_topic"] = topic
            which = f"topic {topic}" if topic else f"all {len(sizes)} topics overlaid"
            title = f"Pooled documents by summed RBP weight ({which}; {qrels.name})"
            plots["scatter"] = PagePlot(title, rows, lambda rows: paper_figures.rank_weight_figure(
                rows, title=title))
    return render_with_figures(request, "pooling/pool_detail.html", ctx, plots,
                               f"pool-{pool.name or pool.pk}")


# --- the seed paper's figures and tables, side by side with what the paper shows ------------


class PaperFiguresForm(NameSelects):
    topic_set = forms.CharField(max_length=100)
    qrels = JudgmentSetField(required=False, choices=(),
                             help_text="judgments for Table 1 and Figure 3 (of the topic set)")
    depth = forms.IntegerField(min_value=1, initial=100, help_text="Table 1's pool depth")
    depths = forms.CharField(initial="10,20,50,100", max_length=100,
                             help_text="Figure 1's depths, one line each")
    model = forms.CharField(max_length=50, required=False)
    p = forms.FloatField(initial=0.9, min_value=0.01, max_value=0.999, label="RBO p")
    orders = forms.IntegerField(initial=10, min_value=1, max_value=200,
                                help_text="random orders averaged in Figure 1")
    pool = forms.CharField(max_length=100, required=False,
                           help_text="Figure 3's pool (default: the newest finished "
                                     "combined pool of the topic set, else any)")
    topic = forms.CharField(max_length=100, required=False,
                            help_text="Figure 3's topic (default: the pool's first)")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The chosen topic set's judgment sets only, as a pool's menu; before a topic set
        # is chosen (or while the name is unknown, which its own field refuses) there is
        # nothing to narrow by, and every judgment set is listed.
        topic_set = topic_set_named(self.data.get("topic_set"))
        self.fields["qrels"].narrow(topic_set, _qrels_choices(topic_set))

    def clean_depths(self):
        return int_list(self.cleaned_data["depths"])


def _figure3_pool(topic_set: str, ref: str | None):
    """The pool Figure 3 draws: ``ref``, else the newest finished pool of the topic set,
    combined first."""
    if ref:
        pool = pooling_selectors.pool_get(ref)
        if pool.topic_set.name != topic_set:
            raise ValueError(f"pool {pool.label} is of topic set {pool.topic_set.name!r}, "
                             f"not {topic_set!r}")
        return pool
    done = [p for p in pooling_selectors.pool_list(topic_set).order_by("-created", "-id")
            if p.status == Pool.STATUS_DONE]
    done.sort(key=lambda p: p.sources != Pool.SOURCES_COMBINED)  # stable: newest first kept
    if not done:
        raise ValueError(f"topic set {topic_set!r} has no finished pool: build one first")
    return done[0]


def paper_figures_view(request):
    """The seed paper's Figures 1–3 and Tables 1–2 computed on a topic set, each beside
    the paper's description of it. A figure whose inputs are missing says what to add."""
    form = bound_with_defaults(PaperFiguresForm, request.GET)
    ctx = {"form": form, "notes": {}}
    plots: dict[str, PagePlot] = {}
    if form.is_valid():
        d = form.cleaned_data
        model = d["model"] or None
        try:
            rows, results = paper.pool_growth_rows(
                d["topic_set"], depths=d["depths"], model_name=model, orders=d["orders"])
        except ValueError as exc:
            ctx["notes"]["figure1"] = web_message(exc)
        else:
            ctx["fits"] = [{"sources": s, "depth": depth, **res["fit"][depth]}
                           for s, res in results.items() for depth in res["fit"]]
            plots["figure1"] = PagePlot("Figure 1: pool size against contributors", rows,
                                        lambda rows: paper_figures.pool_growth_figure(rows))
        try:
            res = analysis.rbo_analysis(d["topic_set"], p=d["p"], model_name=model)
        except ValueError as exc:
            ctx["notes"]["figure2"] = web_message(exc)
        else:
            ctx["rbo"] = res["summary"]
            title = f"Figure 2: RBO (p = {d['p']:g}) distributions"
            plots["figure2"] = PagePlot(title, paper.rbo_distribution_rows(res),
                                        lambda rows: paper_figures.rbo_distribution_figure(
                                            rows, title=title))
        qrels = selectors.qrels_get(d["qrels"]) if d["qrels"] else None
        if qrels is None:
            ctx["notes"]["figure3"] = ctx["notes"]["table1"] = "choose qrels to compare with"
        else:
            records = selectors.qrels_records(qrels)
            try:
                pool = _figure3_pool(d["topic_set"], d["pool"] or None)
                topic = d["topic"] or next(iter(pooling_selectors.pool_sizes(pool)), None)
                if topic is None:
                    raise ValueError(f"pool {pool.label} has no topics")
                rows = paper.rank_weight_rows(pool, records, topic_id=topic)
            except ValueError as exc:
                ctx["notes"]["figure3"] = web_message(exc)
            else:
                ctx["figure3_pool"] = pool
                title = f"Figure 3: topic {topic}, pool {pool.label} ({qrels.name})"
                plots["figure3"] = PagePlot(title, rows, lambda rows: paper_figures.rank_weight_figure(
                    rows, title=title))
            try:
                ctx["table1"] = paper.judgment_table(d["topic_set"], depth=d["depth"],
                                                     qrels=records, qrels_name=qrels.name,
                                                     model_name=model)
            except ValueError as exc:
                ctx["notes"]["table1"] = web_message(exc)
            else:
                if request.GET.get("table") == "table1":
                    cols = ["source", "depth", "size", "relevant", "irrelevant", "unjudged"]
                    return attachment(figures.csv_text(ctx["table1"]["rows"], cols),
                                      figures.FORMATS["csv"], "table1.csv")
                query = request.GET.copy()
                query["table"] = "table1"
                ctx["table1_csv"] = "?" + query.urlencode()
    return render_with_figures(request, "pooling/paper_figures.html", ctx, plots,
                               "paper")
