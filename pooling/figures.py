"""The seed paper's figures (Moffat et al., on user query variability and pooling), drawn
as the paper draws them, one function per figure returning a matplotlib ``Figure`` from
the tidy rows that :func:`common.figures.csv_text` writes beside it.

- :func:`pool_growth_figure` (Figure 1): pool size per topic against the number of
  systems (top) and users (bottom), one line per depth ``d``, log–log, with the fitted
  power law ``v ≈ c·d·n^x`` dashed and its exponent in the legend;
- :func:`rbo_distribution_figure` (Figure 2): the distributions of RBO for user rankings
  against the reference and for pairs of system runs;
- :func:`rank_weight_figure` (Figure 3): for one topic, the pooled documents in order of
  summed RBP weight (x, 1, 2, …) against the shallowest rank at which any run placed
  them (y), a grey square for every document, relevant (+) and irrelevant (×) judgments
  over them;
- :func:`pool_size_figure`: pool size per topic, largest first, readable at any topic
  count.

Plain Python over :mod:`common.figures`; nothing here imports Django.
"""
from __future__ import annotations

from typing import Sequence

from matplotlib.figure import Figure

from common import figures as base

__all__ = [
    "GROWTH_COLUMNS",
    "RANK_WEIGHT_COLUMNS",
    "RBO_COLUMNS",
    "pool_growth_figure",
    "pool_size_figure",
    "rank_weight_figure",
    "rbo_distribution_figure",
]

#: the rows behind each figure, column by column (the CSV's header)
GROWTH_COLUMNS = ("sources", "depth", "n", "topics", "mean_size", "fit_c", "fit_x", "fit_r2",
                  "fit_max_n")
RBO_COLUMNS = ("pairs", "bin_low", "bin_high", "bin_mid", "count", "fraction")
RANK_WEIGHT_COLUMNS = ("topic", "position", "docid", "weight", "min_rank", "judgment")

GREY = "#9a9a9a"
RELEVANT = "#1a7f37"   # green +
IRRELEVANT = "#c62828"  # red ×
_PANELS = (("systems", "systems", "number of systems"), ("users", "users", "number of users"))


def pool_growth_figure(rows: Sequence[dict], *, title: str = "") -> Figure:
    """Figure 1: one panel per source present (systems on top, users below), ``mean_size``
    against ``n`` on log–log axes, one line per ``depth``; where a row carries a fit
    (``fit_c``, ``fit_x`` over ``n = 1..fit_max_n``) the line ``fit_c·depth·n^fit_x`` is
    drawn dashed over that range and the legend gives the exponent."""
    base._check(rows, "sources", "depth", "n", "mean_size")
    panels = [p for p in _PANELS if any(r["sources"] == p[0] for r in rows)]
    if not panels:
        raise ValueError("Figure 1 needs rows of sources 'systems' or 'users'")
    fig, axes = base.new_figure(len(panels), size=(7.5, 3.4 * len(panels)))
    for ax, (source, name, xlabel) in zip(axes, panels):
        mine = [r for r in rows if r["sources"] == source and r["n"] > 0 and r["mean_size"] > 0]
        depths = sorted({int(r["depth"]) for r in mine})
        for i, d in enumerate(depths):
            line = sorted((r for r in mine if int(r["depth"]) == d), key=lambda r: r["n"])
            colour = base.COLOURS[i % len(base.COLOURS)]
            fit = line[0] if line and line[0].get("fit_x") not in (None, "") else None
            label = f"d = {d}" + (f", x = {float(fit['fit_x']):.2f}" if fit else "")
            ax.plot([r["n"] for r in line], [r["mean_size"] for r in line], color=colour,
                    linewidth=1.6, label=label)
            if fit and fit.get("fit_max_n"):
                top = int(fit["fit_max_n"])
                ns = [r["n"] for r in line if r["n"] <= top]
                c, x = float(fit["fit_c"]), float(fit["fit_x"])
                ax.plot(ns, [c * d * n ** x for n in ns], color=colour, linewidth=1,
                        linestyle="--")
        ax.set_xscale("log")
        ax.set_yscale("log")
        base._log_axis(ax.xaxis)
        base._log_axis(ax.yaxis)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("pool size per topic")
        ax.set_title(f"{title} — {name}" if title else name.capitalize())
        base.styled(ax, lambda ax=ax: ax.legend(
            frameon=False, title="dashed: v ≈ c·d·n^x", fontsize=9, title_fontsize=9))
    return fig


def rbo_distribution_figure(rows: Sequence[dict], *, title: str = "") -> Figure:
    """Figure 2: the fraction of pairs in each RBO bin, one step outline per group
    (``pairs``: user rankings against the reference, system runs against each other)."""
    base._check(rows, "pairs", "bin_low", "bin_high", "fraction")
    fig, (ax,) = base.new_figure()
    groups = base._series(rows, "pairs")
    for i, (name, group) in enumerate(groups):
        group = sorted(group, key=lambda r: r["bin_low"])
        edges = [r["bin_low"] for r in group] + [group[-1]["bin_high"]]
        colour = base.COLOURS[i % len(base.COLOURS)]
        ax.stairs([r["fraction"] for r in group], edges, color=colour, linewidth=1.8,
                  fill=False, label=name)
        ax.stairs([r["fraction"] for r in group], edges, color=colour, alpha=0.15, fill=True)
    ax.set_xlim(min(r["bin_low"] for r in rows), max(r["bin_high"] for r in rows))
    base._linear_axis(ax.xaxis)
    base._linear_axis(ax.yaxis)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("RBO (extrapolated)")
    ax.set_ylabel("fraction of pairs")
    ax.set_title(title or "RBO distributions")
    base.styled(ax, lambda: ax.legend(frameon=False))
    return fig


def rank_weight_figure(rows: Sequence[dict], *, title: str = "") -> Figure:
    """Figure 3: a grey square at (``position``, ``min_rank``) for every pooled document —
    ``position`` its place in the order of summed RBP weight (1 the heaviest), ``min_rank``
    the shallowest rank at which any run placed it (log axis) — with ``+`` over the
    relevant and ``×`` over the irrelevant (``judgment``); the legend, outside the axes,
    counts each kind."""
    base._check(rows, "position", "min_rank", "judgment")
    fig, (ax,) = base.new_figure(size=(7.5, 4.6))
    kept = [r for r in rows if r["min_rank"] and r["min_rank"] > 0]
    if not kept:
        raise ValueError("Figure 3 needs documents with a shallowest rank of at least 1")
    ax.scatter([r["position"] for r in kept], [r["min_rank"] for r in kept], marker="s",
               s=9, color=GREY, alpha=0.6, linewidths=0,
               label=f"pooled ({len(kept)})")
    for judgment, marker, colour, size in (("relevant", "+", RELEVANT, 40),
                                           ("irrelevant", "x", IRRELEVANT, 22)):
        mine = [r for r in kept if r["judgment"] == judgment]
        ax.scatter([r["position"] for r in mine], [r["min_rank"] for r in mine],
                   marker=marker, s=size, color=colour, linewidths=1.1,
                   label=f"{judgment} ({len(mine)})")
    unjudged = sum(1 for r in kept if r["judgment"] not in ("relevant", "irrelevant"))
    ax.set_yscale("log")
    base._log_axis(ax.yaxis)
    base._linear_axis(ax.xaxis, integer=True)
    ax.set_xlim(0, max(r["position"] for r in kept) + 1)
    ax.set_xlabel("documents in order of summed RBP weight")
    ax.set_ylabel("shallowest rank in any run")
    ax.set_title(title or "Pooled documents by weight and shallowest rank")
    base.styled(ax, lambda: ax.legend(
        frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0,
        title=f"unjudged: {unjudged}", title_fontsize=9, fontsize=9))
    return fig


def pool_size_figure(rows: Sequence[dict], *, title: str = "") -> Figure:
    """Pool size (``documents``) per ``topic``, largest first: the order, not the topic
    id, is the x axis, so 225 topics read as a curve with every k-th topic labelled."""
    many = len(rows) > base.MAX_CATEGORY_LABELS
    return base.bar_figure(
        rows, "topic", "documents", title=title or "Pool size per topic",
        xlabel="topic (largest pool first)" if many else "topic",
        ylabel="pooled documents", sort=many)
