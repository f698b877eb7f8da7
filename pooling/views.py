"""Pages for organisers (staff): pools and the pool analyses with their figures.

The pages under /pooling/ that read judgments too (a pool's page with its coverage, the
qrels pages, the seed paper's figures and tables) are :mod:`judging.views.pool_pages`: the
judging app reads both pools and judgment sets; ``config.urls`` mounts both under the
``pooling`` names. The helpers they share are public here.

Each view validates a form, calls a selector, an analysis or a service, and renders. The
figures are drawn by :mod:`common.figures` (matplotlib): SVG inline, and PNG, PDF, SVG and
the CSV behind each from the same view with ``?figure=NAME&format=FMT``.
"""
from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from common import figures
from common.figure_pages import PagePlot, download, figure_html
from common.webmessages import web_message

from . import analysis, selectors, services


def render_with_figures(request, template, ctx, plots: dict, stem: str):
    """The page with each plot inline as ``<name>_svg``, or the download it asks for."""
    response = download(request, plots, stem)
    if response is not None:
        return response
    for name, plot in plots.items():
        ctx[f"{name}_svg"] = figure_html(request, name, plot)
    return render(request, template, ctx)


def pool_or_404(ref):
    try:
        return selectors.pool_get(ref)
    except ValueError:
        raise Http404(f"no pool {ref}") from None


class NameLists:
    """The names of the topic sets, retrieval models and collections, each list read from
    the database once, when a select first shows or checks it, however many forms of the
    page use it."""

    def __init__(self):
        self._names: dict[str, list[str]] = {}

    def __getitem__(self, field: str) -> list[str]:
        if field not in self._names:
            from retrieval.selectors import collection_list, retrieval_model_list
            from topics.selectors import topic_set_list

            source = {"topic_set": topic_set_list, "model": retrieval_model_list,
                      "collection": collection_list}[field]
            self._names[field] = [row.name for row in source()]
        return self._names[field]


class NameSelects(forms.Form):
    """Topic set, model and collection fields as selects of what exists; a name not in the
    list is refused naming what it is not (``no topic set 'x'``)."""

    WHAT = {"topic_set": "topic set", "model": "retrieval model", "collection": "collection"}

    def __init__(self, *args, names: NameLists | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        names = names if names is not None else NameLists()
        for field, what in self.WHAT.items():
            old = self.fields.get(field)
            if old is None:
                continue
            blank = [] if old.required else [("", "any" if field != "topic_set" else "—")]
            self.fields[field] = forms.ChoiceField(
                required=old.required, label=old.label, help_text=old.help_text,
                initial=old.initial,
                choices=lambda field=field, blank=blank: blank + [(n, n) for n in names[field]],
                error_messages={"invalid_choice": f"no {what} %(value)r: choose one of the list"})


def _index_forms(**bound) -> dict:
    names = NameLists()
    forms_ = {"build_form": PoolBuildForm, "growth_form": GrowthForm, "rbo_form": RBOForm}
    return {key: bound.get(key) or form_class(names=names) for key, form_class in forms_.items()}


def index(request):
    return render(
        request,
        "pooling/index.html",
        {
            "pools": selectors.pool_list()[:200],
            **_index_forms(),
        },
    )


class PoolBuildForm(NameSelects):
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
            form.add_error(None, web_message(exc))
        else:
            messages.success(request, f"pool {pool.label} queued")
            return redirect("pooling:pool_detail", ref=pool.pk)
    return render(request, "pooling/index.html", {
        "pools": selectors.pool_list()[:200],
        **_index_forms(build_form=form),
    }, status=400)


def int_list(value: str) -> list[int]:
    try:
        out = sorted({int(v) for v in value.replace(",", " ").split()})
    except ValueError:
        raise forms.ValidationError("give whole numbers separated by commas") from None
    if not out or out[0] < 1:
        raise forms.ValidationError("give at least one depth, each at least 1")
    return out


def bound_with_defaults(form_class, query):
    """Bind a GET form, filling parameters the link left out with their initial values,
    so ``?topic_set=T`` alone is a complete request."""
    if not query:
        return form_class()
    data = query.copy()
    for name, field in form_class.base_fields.items():
        if not data.get(name) and field.initial is not None:
            data[name] = field.initial
    return form_class(data)


class TopicSetOrPoolForm(NameSelects):
    """A topic set, whose contributing runs are read as they are now, or a pool, whose
    topic set and recorded runs are read (``run_ids`` in the cleaned data)."""

    topic_set = forms.CharField(max_length=100, required=False)
    pool = forms.CharField(max_length=100, required=False,
                           help_text="or a pool: its topic set and the runs it was built from")

    def clean(self):
        d = super().clean()
        d["run_ids"] = None
        if d.get("pool"):
            try:
                pool = selectors.pool_get(d["pool"])
            except ValueError as exc:
                self.add_error("pool", web_message(exc))
                return d
            if d.get("topic_set") and d["topic_set"] != pool.topic_set.name:
                self.add_error("topic_set", f"pool {pool.label} is of topic set "
                                            f"{pool.topic_set.name!r}; leave this empty")
                return d
            d["topic_set"], d["run_ids"] = pool.topic_set.name, selectors.pool_run_ids(pool)
        elif not d.get("topic_set"):
            raise forms.ValidationError("give a topic set or a pool")
        return d


class GrowthForm(TopicSetOrPoolForm):
    depths = forms.CharField(initial="10,100", max_length=100)
    model = forms.CharField(max_length=50, required=False)
    collection = forms.CharField(max_length=100, required=False)
    orders = forms.IntegerField(initial=10, min_value=1, max_value=200)
    seed = forms.IntegerField(initial=0, min_value=0)

    def clean_depths(self):
        return int_list(self.cleaned_data["depths"])


def growth(request):
    form = bound_with_defaults(GrowthForm, request.GET)
    ctx = {"form": form}
    plots = {}
    if form.is_valid():
        d = form.cleaned_data
        results, errors = {}, []
        for sources in ("users", "systems"):
            try:
                results[sources] = analysis.pool_growth_analysis(
                    d["topic_set"], sources=sources, depths=d["depths"],
                    model_name=d["model"] or None, collection_name=d["collection"] or None,
                    orders=d["orders"], seed=d["seed"], run_ids=d["run_ids"],
                )
            except ValueError as exc:
                errors.append(web_message(exc))
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
                    series += [{"series": f"{sources} @{depth}", "contributors": n, "mean_size": y}
                               for n, y in zip(curve["n"], curve["random"]) if n > 0 and y > 0]
                    fits.append({"sources": sources, "depth": depth, **res["fit"][depth],
                                 "contributor": res["contributor"],
                                 "ordered_by": res["ordered_by"],
                                 "contributors": curve["n"][-1],
                                 "final_size": curve["random"][-1]})
            ctx["fits"] = fits
            if series:
                plots["growth"] = PagePlot("Pool growth", series, lambda rows: figures.line_figure(
                    rows, "contributors", "mean_size", series="series", title="Pool growth",
                    xlabel="contributors", ylabel="mean pool size per topic", xlog=True, ylog=True))
    return render_with_figures(request, "pooling/growth.html", ctx, plots, "pool-growth")


class RBOForm(TopicSetOrPoolForm):
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


def rbo(request):
    form = bound_with_defaults(RBOForm, request.GET)
    ctx = {"form": form}
    plots = {}
    if form.is_valid():
        d = form.cleaned_data
        try:
            res = analysis.rbo_analysis(
                d["topic_set"], p=d["p"], reference=d["reference"],
                model_name=d["model"] or None, collection_name=d["collection"] or None,
                test=d["test"], run_ids=d["run_ids"],
            )
        except ValueError as exc:
            form.add_error(None, web_message(exc))
        else:
            ctx["result"] = res
            rows = [row for key, label in (("user", "user variants"), ("system", "system runs"))
                    if res[key]
                    for row in figures.histogram_rows([r["ext"] for r in res[key]], bins=20, pairs=label)]
            if rows:
                title = f"RBO (p = {d['p']:g}) distribution"
                plots["rbo"] = PagePlot(title, rows, lambda rows: figures.line_figure(
                    rows, "bin_mid", "fraction", series="pairs", title=title,
                    xlabel="RBO (extrapolated), bins of 0.05", ylabel="fraction of pairs"))
    return render_with_figures(request, "pooling/rbo.html", ctx, plots, "pool-rbo")
