"""Pages for organisers (staff): pools, qrels, and the pool analyses with inline SVG plots.

Each view validates a form, calls a selector, an analysis or a service, and renders. The
small SVG plotter at the end draws server-side with no plotting library (and no scripts in
the page).
"""
from __future__ import annotations

import math

from django import forms
from django.contrib.auth.decorators import user_passes_test
from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from django.utils.html import escape
from django.utils.safestring import mark_safe

from . import analysis, selectors, services

staff_required = user_passes_test(lambda u: u.is_active and u.is_staff)

SCATTER_POINTS = 5000  # an evenly spaced subset of larger pools is drawn
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"]


def _pool_or_404(ref):
    try:
        return selectors.pool_get(ref)
    except ValueError:
        raise Http404(f"no pool {ref}") from None


def _qrels_choices():
    return [("", "—")] + [(q.name, q.name) for q in selectors.qrels_list()]


@staff_required
def index(request):
    return render(
        request,
        "pooling/index.html",
        {
            "pools": selectors.pool_list()[:200],
            "qrels": selectors.qrels_list(),
            "build_form": PoolBuildForm(),
            "growth_form": GrowthForm(),
            "rbo_form": RBOForm(),
        },
    )


class PoolBuildForm(forms.Form):
    topic_set = forms.CharField(max_length=100)
    sources = forms.ChoiceField(choices=[("users", "users"), ("systems", "systems"),
                                         ("combined", "combined")])
    depth = forms.IntegerField(
        min_value=1, initial=100, required=False,
        help_text="each ranking's top depth; rbp may leave it empty (the stored depth)")
    strategy = forms.ChoiceField(choices=[("depth", "depth: shallowest rank first"),
                                          ("rbp", "rbp: heaviest RBP weight first")])
    p = forms.FloatField(initial=0.95, min_value=0.001, max_value=0.999)
    budget = forms.IntegerField(min_value=1, required=False)
    budget_scope = forms.ChoiceField(choices=[("topic", "per topic"), ("global", "global")])
    model = forms.CharField(max_length=50, required=False)
    collection = forms.CharField(max_length=100, required=False)
    name = forms.CharField(max_length=100, required=False)

    def __init__(self, *args, **kwargs):
        """Topic sets, models and collections as selects of what exists (the service still
        checks what is posted and names what is wrong)."""
        super().__init__(*args, **kwargs)
        from crowd.selectors import topic_set_list
        from retrieval.selectors import collection_list, retrieval_model_list

        lists = {"topic_set": [t.name for t in topic_set_list()],
                 "model": [m.name for m in retrieval_model_list()],
                 "collection": [c.name for c in collection_list()]}
        for field, names in lists.items():
            blank = [] if self.fields[field].required else [("", "any")]
            self.fields[field].widget = forms.Select(choices=blank + [(n, n) for n in names])


@staff_required
@require_POST
def pool_build_view(request):
    """Queue a pool build for a Celery worker (the task is sent once the pool is saved)."""
    form = PoolBuildForm(request.POST)
    if form.is_valid():
        d = form.cleaned_data
        try:
            pool = services.pool_create(
                topic_set_name=d["topic_set"], sources=d["sources"], depth=d["depth"],
                strategy=d["strategy"], p=d["p"], budget=d["budget"],
                budget_scope=d["budget_scope"], model_name=d["model"] or None,
                collection_name=d["collection"] or None, name=d["name"] or None,
                enqueue=True,
            )
        except ValueError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"pool {pool.label} queued")
            return redirect("pooling:pool_detail", ref=pool.pk)
    return render(request, "pooling/index.html", {
        "pools": selectors.pool_list()[:200],
        "qrels": selectors.qrels_list(),
        "build_form": form,
        "growth_form": GrowthForm(),
        "rbo_form": RBOForm(),
    }, status=400)


class PoolQrelsForm(forms.Form):
    qrels = forms.ChoiceField(required=False, choices=())

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["qrels"].choices = _qrels_choices()


@staff_required
def pool_detail(request, ref):
    pool = _pool_or_404(ref)
    form = PoolQrelsForm(request.GET or None)
    summary = selectors.pool_size_summary(pool)
    ctx = {"pool": pool, "form": form, "summary": summary}
    sizes = summary["sizes"]
    if sizes:
        ctx["sizes_svg"] = svg_plot(
            [{"label": "documents", "xs": list(range(len(sizes))), "ys": list(sizes.values())}],
            kind="bar",
            xlabel="topic",
            ylabel="pool size",
            xticklabels=list(sizes.keys()),
        )
    qrels_name = form.cleaned_data.get("qrels") if form.is_valid() else ""
    if qrels_name and pool.status == pool.STATUS_DONE:
        qrels = selectors.qrels_get(qrels_name)
        ctx["qrels"] = qrels
        ctx["coverage"] = analysis.pool_coverage(pool, qrels)
        points = analysis.pool_rank_weight_points(pool, qrels, limit=SCATTER_POINTS)
        judged = [pt for pt in points if pt["judged"]]
        unjudged = [pt for pt in points if not pt["judged"]]
        ctx["scatter_svg"] = svg_plot(
            [
                {"label": "unjudged", "xs": [pt["min_rank"] for pt in unjudged],
                 "ys": [pt["weight"] for pt in unjudged], "colour": "#999999"},
                {"label": "judged", "xs": [pt["min_rank"] for pt in judged],
                 "ys": [pt["weight"] for pt in judged], "colour": "#d62728"},
            ],
            kind="scatter",
            xlabel="shallowest rank",
            ylabel="aggregate weight",
            xlog=True,
            ylog=True,
        )
    return render(request, "pooling/pool_detail.html", ctx)


def _int_list(value: str) -> list[int]:
    try:
        out = sorted({int(v) for v in value.replace(",", " ").split()})
    except ValueError:
        raise forms.ValidationError("give whole numbers separated by commas") from None
    if not out or out[0] < 1:
        raise forms.ValidationError("give at least one depth, each at least 1")
    return out


def _bound_with_defaults(form_class, query):
    """Bind a GET form, filling parameters the link left out with their initial values,
    so ``?topic_set=T`` alone is a complete request."""
    if not query:
        return form_class()
    data = query.copy()
    for name, field in form_class.base_fields.items():
        if not data.get(name) and field.initial is not None:
            data[name] = field.initial
    return form_class(data)


class GrowthForm(forms.Form):
    topic_set = forms.CharField(max_length=100)
    depths = forms.CharField(initial="10,100", max_length=100)
    model = forms.CharField(max_length=50, required=False)
    collection = forms.CharField(max_length=100, required=False)
    orders = forms.IntegerField(initial=10, min_value=1, max_value=200)
    seed = forms.IntegerField(initial=0, min_value=0)

    def clean_depths(self):
        return _int_list(self.cleaned_data["depths"])


@staff_required
def growth(request):
    form = _bound_with_defaults(GrowthForm, request.GET)
    ctx = {"form": form}
    if form.is_valid():
        d = form.cleaned_data
        results, errors = {}, []
        for sources in ("users", "systems"):
            try:
                results[sources] = analysis.pool_growth_analysis(
                    d["topic_set"], sources=sources, depths=d["depths"],
                    model_name=d["model"] or None, collection_name=d["collection"] or None,
                    orders=d["orders"], seed=d["seed"],
                )
            except ValueError as exc:
                errors.append(str(exc))
        if not results:
            for message in errors:
                form.add_error(None, message)
        else:
            ctx["notes"] = errors
            series = []
            fits = []
            for sources, res in results.items():
                for depth, curve in res["curves"].items():
                    if not curve["n"]:
                        continue
                    series.append({"label": f"{sources} @{depth}", "xs": curve["n"],
                                   "ys": curve["random"]})
                    fits.append({"sources": sources, "depth": depth, **res["fit"][depth],
                                 "contributor": res["contributor"],
                                 "ordered_by": res["ordered_by"],
                                 "contributors": curve["n"][-1],
                                 "final_size": curve["random"][-1]})
            ctx["fits"] = fits
            if series:
                ctx["growth_svg"] = svg_plot(
                    series, kind="line", xlabel="contributors", ylabel="mean pool size",
                    xlog=True, ylog=True,
                )
    return render(request, "pooling/growth.html", ctx)


class RBOForm(forms.Form):
    topic_set = forms.CharField(max_length=100)
    p = forms.FloatField(initial=0.9, min_value=0.01, max_value=0.999)
    reference = forms.ChoiceField(
        choices=[("titles", "title-query ranking"), ("pairs", "all pairs")], initial="titles"
    )
    model = forms.CharField(max_length=50, required=False)
    collection = forms.CharField(max_length=100, required=False)
    test = forms.ChoiceField(
        choices=[("topic", "per topic: Wilcoxon signed-rank over topic means"),
                 ("pair", "pair-level: Mann-Whitney U over pairs (anti-conservative)")],
        initial="topic")


@staff_required
def rbo(request):
    form = _bound_with_defaults(RBOForm, request.GET)
    ctx = {"form": form}
    if form.is_valid():
        d = form.cleaned_data
        try:
            res = analysis.rbo_analysis(
                d["topic_set"], p=d["p"], reference=d["reference"],
                model_name=d["model"] or None, collection_name=d["collection"] or None,
                test=d["test"],
            )
        except ValueError as exc:
            form.add_error(None, str(exc))
        else:
            ctx["result"] = res
            series = [
                {"label": label, **_histogram([r["ext"] for r in res[key]])}
                for key, label in (("user", "user variants"), ("system", "system runs"))
                if res[key]
            ]
            if series:
                ctx["rbo_svg"] = svg_plot(series, kind="line", xlabel="RBO (extrapolated)",
                                          ylabel="fraction of pairs")
    return render(request, "pooling/rbo.html", ctx)


def _histogram(values, bins=20):
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, max(0, int(v * bins)))] += 1
    total = max(1, len(values))
    return {"xs": [(i + 0.5) / bins for i in range(bins)], "ys": [c / total for c in counts]}


@staff_required
def qrels_detail(request, name):
    try:
        qrels = selectors.qrels_get(name)
    except ValueError:
        raise Http404(f"no qrels {name}") from None
    return render(
        request, "pooling/qrels_detail.html",
        {"qrels": qrels, "stats": selectors.qrels_summary(qrels)},
    )


# --- inline SVG ------------------------------------------------------------------------


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v:.0f}"
    if abs(v) < 0.01:
        return f"{v:.2g}"
    return f"{v:.3g}"


def svg_plot(series, *, kind="line", xlabel="", ylabel="", xlog=False, ylog=False,
             xticklabels=None, width=680, height=360):
    """An SVG chart of ``series`` (dicts with label, xs, ys and optional colour).

    ``kind`` is line, scatter or bar; logarithmic axes drop non-positive values.
    """
    left, right, top, bottom = 64, 140, 16, 48
    pw, ph = width - left - right, height - top - bottom
    tx = (lambda v: math.log10(v)) if xlog else float
    ty = (lambda v: math.log10(v)) if ylog else float
    clean = []
    for i, s in enumerate(series):
        pts = [(x, y) for x, y in zip(s["xs"], s["ys"])
               if (not xlog or x > 0) and (not ylog or y > 0)]
        clean.append((s, pts, s.get("colour") or COLOURS[i % len(COLOURS)]))
    allx = [tx(x) for _, pts, _ in clean for x, _ in pts]
    ally = [ty(y) for _, pts, _ in clean for _, y in pts]
    if not allx:
        return mark_safe('<p class="muted">nothing to plot</p>')
    x0, x1 = min(allx), max(allx)
    y0, y1 = min(ally), max(ally)
    if not ylog:
        y0 = min(0.0, y0)
    if kind == "bar":
        x0, x1 = x0 - 0.5, x1 + 0.5
    if x1 - x0 < 1e-12:
        x0, x1 = x0 - 1, x1 + 1
    if y1 - y0 < 1e-12:
        y0, y1 = y0 - 1, y1 + 1

    def X(v):
        return left + (tx(v) - x0) / (x1 - x0) * pw

    def Y(v):
        return top + ph - (ty(v) - y0) / (y1 - y0) * ph

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(ylabel)} against {escape(xlabel)}" font-size="11">',
        f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>',
    ]
    for i in range(5):  # ticks
        fx = x0 + (x1 - x0) * i / 4
        fy = y0 + (y1 - y0) * i / 4
        px = left + pw * i / 4
        py = top + ph - ph * i / 4
        if kind != "bar":
            xv = 10 ** fx if xlog else fx
            out.append(f'<text x="{px:.1f}" y="{top + ph + 14}" text-anchor="middle">'
                       f"{_fmt(xv)}</text>")
        yv = 10 ** fy if ylog else fy
        out.append(f'<text x="{left - 4}" y="{py + 4:.1f}" text-anchor="end">{_fmt(yv)}</text>')
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{py:.1f}" y2="{py:.1f}" '
                   f'stroke="#eee"/>')
    if kind == "bar" and xticklabels:
        step = max(1, len(xticklabels) // 20)
        for i in range(0, len(xticklabels), step):
            out.append(f'<text x="{X(i):.1f}" y="{top + ph + 14}" text-anchor="middle">'
                       f"{escape(str(xticklabels[i]))}</text>")
    out.append(f'<text x="{left + pw / 2}" y="{height - 8}" text-anchor="middle">'
               f"{escape(xlabel)}{' (log)' if xlog else ''}</text>")
    out.append(f'<text transform="translate(14 {top + ph / 2}) rotate(-90)" '
               f'text-anchor="middle">{escape(ylabel)}{" (log)" if ylog else ""}</text>')
    for k, (s, pts, colour) in enumerate(clean):
        if kind == "line" and pts:
            coords = " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in pts)
            out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" '
                       f'points="{coords}"/>')
        elif kind == "scatter":
            out.extend(f'<circle cx="{X(x):.1f}" cy="{Y(y):.1f}" r="2" fill="{colour}" '
                       f'fill-opacity="0.6"/>' for x, y in pts)
        elif kind == "bar":
            bw = max(1.0, pw / max(1, len(pts)) * 0.8)
            base = Y(y0) if not ylog else top + ph
            out.extend(
                f'<rect x="{X(x) - bw / 2:.1f}" y="{Y(y):.1f}" width="{bw:.1f}" '
                f'height="{max(0.0, base - Y(y)):.1f}" fill="{colour}"/>'
                for x, y in pts
            )
        ly = top + 12 + 16 * k
        out.append(f'<rect x="{left + pw + 10}" y="{ly - 8}" width="10" height="10" '
                   f'fill="{colour}"/>')
        out.append(f'<text x="{left + pw + 24}" y="{ly + 1}">{escape(s["label"])}</text>')
    out.append("</svg>")
    return mark_safe("".join(out))
