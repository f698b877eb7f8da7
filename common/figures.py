"""Figures for pages and papers: one function per figure, each returning a matplotlib
``Figure`` drawn from tidy rows (a list of dicts), the same rows that :func:`csv_text`
writes beside it.

Plain Python (matplotlib's object API with no pyplot, so no global state and no GUI
backend: PNG is drawn by Agg, SVG and PDF by their own backends); nothing here imports
Django. Output is deterministic: SVG ids come from a fixed
hash salt and no format records a date or the software version, so the same data gives
the same bytes.

Ticks are readable: a log axis is ticked at 1, 2, 5 × 10^k (labelled as plain numbers),
a linear axis at multiples of 1, 2 or 5 × 10^k; a category axis with more labels than fit
labels every k-th category.

Figures carry their own colours: a white background and dark ink set on every text, tick
and spine (:data:`STYLE`, applied when the figure is made), and the inline SVG names its
fill, so a page in dark mode (whose CSS fills unfilled SVG with the light page colour)
shows the same figure as the PNG.
"""
from __future__ import annotations

import io
import math
from typing import Iterable, Sequence

from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from common.spreadsheet import spreadsheet_writer

__all__ = [
    "FORMATS",
    "bar_figure",
    "box_figure",
    "category_ticks",
    "csv_text",
    "histogram_rows",
    "interval_figure",
    "line_figure",
    "new_figure",
    "render",
    "scatter_figure",
    "styled",
    "svg_inline",
    "tick_label",
]

#: download formats and their content types
FORMATS = {
    "svg": "image/svg+xml",
    "png": "image/png",
    "pdf": "application/pdf",
    "csv": "text/csv; charset=utf-8",
}

SIZE = (7.5, 4.2)  # inches: 720×403 px at 96 dpi, readable inline and in a two-column paper
PNG_DPI = 150
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")
INK = "#222222"  # text, ticks and spines: not pure black, so the SVG writes the fill
PAPER = "#ffffff"  # the figure's own background
GRID = "#dddddd"
MAX_CATEGORY_LABELS = 40  # beyond this, every k-th category is labelled
#: colours set when a figure is made (rcParams are read as artists are created)
STYLE = {
    "figure.facecolor": PAPER,
    "axes.facecolor": PAPER,
    "savefig.facecolor": PAPER,
    "text.color": INK,
    "axes.labelcolor": INK,
    "axes.titlecolor": INK,
    "axes.edgecolor": INK,
    "xtick.color": INK,
    "ytick.color": INK,
    "xtick.labelcolor": INK,
    "ytick.labelcolor": INK,
    "legend.labelcolor": INK,
    "legend.facecolor": PAPER,
}
_RC = {
    "svg.hashsalt": "figures",
    "svg.fonttype": "none",  # text stays text: smaller, selectable, styled by the page font
    "font.size": 11,
    "axes.titlesize": 13,
    "axes.labelsize": 12,
    "legend.fontsize": 10,
    "pdf.fonttype": 42,
}
_METADATA = {
    "svg": {"Date": None, "Creator": None},
    "pdf": {"CreationDate": None, "ModDate": None, "Producer": None, "Creator": None},
    "png": {"Software": None},
}


# --- ticks -------------------------------------------------------------------------------


def tick_label(value: float) -> str:
    """A tick value as a short plain number: 1, 2.5, 0.05, 2000, 1e-05 (no float noise)."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    text = f"{value:.6g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        if -4 <= int(exponent) < 7:
            return f"{value:.{max(0, -int(exponent) + 6)}f}".rstrip("0").rstrip(".")
        return f"{mantissa}e{int(exponent)}"
    return text


def _label(value, _pos=None) -> str:
    return tick_label(float(value))


def _log_axis(axis) -> None:
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(_label))
    axis.set_minor_formatter(NullFormatter())


def _linear_axis(axis, integer: bool = False) -> None:
    axis.set_major_locator(MaxNLocator(nbins=6, steps=[1, 2, 5, 10], integer=integer))
    axis.set_major_formatter(FuncFormatter(_label))


def new_figure(nrows: int = 1, *, size: tuple[float, float] | None = None,
               sharex: bool = False) -> tuple[Figure, list]:
    """An empty figure of ``nrows`` stacked axes in the house colours (:data:`STYLE`),
    each with a light major grid below the data."""
    with rc_context(STYLE):
        fig = Figure(figsize=size or SIZE, layout="constrained")
        axes = fig.subplots(nrows, 1, sharex=sharex, squeeze=False)[:, 0].tolist()
    for ax in axes:
        ax.grid(True, which="major", color=GRID, linewidth=0.8)
        ax.set_axisbelow(True)
    return fig, axes


def styled(ax, draw):
    """Run ``draw()`` (which adds artists to ``ax``) under :data:`STYLE`, so legends and
    texts made late get the house colours too."""
    with rc_context(STYLE):
        return draw()


def _axes(title: str, xlabel: str, ylabel: str):
    fig, (ax,) = new_figure()
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return fig, ax


def _scale(ax, xlog: bool, ylog: bool, xint: bool = False, yint: bool = False) -> None:
    if xlog:
        ax.set_xscale("log")
        _log_axis(ax.xaxis)
    else:
        _linear_axis(ax.xaxis, xint)
    if ylog:
        ax.set_yscale("log")
        _log_axis(ax.yaxis)
    else:
        _linear_axis(ax.yaxis, yint)


def category_ticks(ax, cats: list[str], max_labels: int = MAX_CATEGORY_LABELS) -> None:
    """Category labels, turned upright when they would not fit side by side; with more
    than ``max_labels`` categories only every k-th is labelled (the first, then every
    k-th after it), so 225 topics are a readable axis and not a black smear."""
    step = max(1, math.ceil(len(cats) / max_labels))
    shown = list(range(0, len(cats), step))
    labels = [cats[i] for i in shown]
    crowded = sum(len(c) + 1 for c in labels) > 70
    ax.set_xticks(shown, labels, rotation=90 if crowded else 0,
                  fontsize=8 if len(labels) > 30 else None)


_category_ticks = category_ticks


def _series(rows: Sequence[dict], series: str | None) -> list[tuple[str, list[dict]]]:
    """Rows grouped by the ``series`` column in first-seen order (one group without it)."""
    if not series:
        return [("", list(rows))]
    groups: dict = {}
    for r in rows:
        groups.setdefault(str(r[series]), []).append(r)
    return list(groups.items())


def _check(rows: Sequence[dict], *columns: str | None) -> None:
    if not rows:
        raise ValueError("a figure needs at least one row of data")
    for c in columns:
        if c and c not in rows[0]:
            raise ValueError(f"the figure's rows have no column {c!r} (they have {', '.join(rows[0])})")


def _legend(ax, n: int) -> None:
    if n > 1:
        styled(ax, lambda: ax.legend(frameon=False))


def _positive(rows, column):
    bad = [r[column] for r in rows if r[column] is not None and r[column] <= 0]
    if bad:
        raise ValueError(f"a log axis cannot show {column} = {bad[0]} (values must be positive)")


# --- figures -----------------------------------------------------------------------------


def line_figure(rows: Sequence[dict], x: str, y: str, *, series: str | None = None,
                title: str = "", xlabel: str = "", ylabel: str = "", xlog: bool = False,
                ylog: bool = False, markers: bool = True, xint: bool = False) -> Figure:
    """One line per value of ``series``: ``y`` against ``x``, points in row order."""
    _check(rows, x, y, series)
    if xlog:
        _positive(rows, x)
    if ylog:
        _positive(rows, y)
    fig, ax = _axes(title, xlabel or x, ylabel or y)
    groups = _series(rows, series)
    for i, (name, group) in enumerate(groups):
        pts = [(r[x], r[y]) for r in group if r[y] is not None]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o" if markers else None,
                markersize=4, linewidth=1.6, color=COLOURS[i % len(COLOURS)], label=name or None)
    _scale(ax, xlog, ylog, xint=xint)
    _legend(ax, len(groups))
    return fig


def scatter_figure(rows: Sequence[dict], x: str, y: str, *, series: str | None = None,
                   title: str = "", xlabel: str = "", ylabel: str = "", xlog: bool = False,
                   ylog: bool = False, diagonal: bool = False, labels: str | None = None) -> Figure:
    """Points ``(x, y)`` coloured by ``series``; ``diagonal`` draws y = x; ``labels``
    names a column written beside each point."""
    _check(rows, x, y, series, labels)
    if xlog:
        _positive(rows, x)
    if ylog:
        _positive(rows, y)
    fig, ax = _axes(title, xlabel or x, ylabel or y)
    groups = _series(rows, series)
    for i, (name, group) in enumerate(groups):
        ax.scatter([r[x] for r in group], [r[y] for r in group], s=18, alpha=0.8,
                   color=COLOURS[i % len(COLOURS)], label=name or None, linewidths=0)
        if labels:
            for r in group:
                ax.annotate(str(r[labels]), (r[x], r[y]), fontsize=8, xytext=(3, 3),
                            textcoords="offset points")
    if diagonal:
        lo = min(min(r[x] for r in rows), min(r[y] for r in rows))
        hi = max(max(r[x] for r in rows), max(r[y] for r in rows))
        ax.plot([lo, hi], [lo, hi], color="#999999", linewidth=1, linestyle="--")
    _scale(ax, xlog, ylog)
    _legend(ax, len(groups))
    return fig


def bar_figure(rows: Sequence[dict], x: str, y: str, *, series: str | None = None,
               title: str = "", xlabel: str = "", ylabel: str = "", ylog: bool = False,
               sort: bool = False) -> Figure:
    """Bars of ``y`` for each category ``x`` (in first-seen order, or with ``sort`` by
    falling total ``y``, ties by first-seen order), grouped side by side by ``series``.
    Many categories are labelled every k-th (:func:`category_ticks`)."""
    _check(rows, x, y, series)
    fig, ax = _axes(title, xlabel or x, ylabel or y)
    cats = list(dict.fromkeys(str(r[x]) for r in rows))
    if sort:
        total: dict[str, float] = {}
        for r in rows:
            total[str(r[x])] = total.get(str(r[x]), 0) + (r[y] or 0)
        cats.sort(key=lambda c: -total[c])  # stable: ties keep first-seen order
    groups = _series(rows, series)
    width = 0.8 / len(groups)
    for i, (name, group) in enumerate(groups):
        values = {str(r[x]): r[y] for r in group}
        xs = [c + (i - (len(groups) - 1) / 2) * width for c in range(len(cats))]
        ax.bar(xs, [values.get(c) or 0 for c in cats], width=width * 0.95,
               color=COLOURS[i % len(COLOURS)], label=name or None)
    _category_ticks(ax, cats)
    ax.set_xlim(-0.6, len(cats) - 0.4)
    ax.grid(False, axis="x")
    if ylog:
        ax.set_yscale("log")
        _log_axis(ax.yaxis)
    else:
        _linear_axis(ax.yaxis)
    _legend(ax, len(groups))
    return fig


def interval_figure(rows: Sequence[dict], x: str, y: str, low: str, high: str, *,
                    series: str | None = None, title: str = "", xlabel: str = "",
                    ylabel: str = "") -> Figure:
    """A point at ``y`` with a bar from ``low`` to ``high`` for each category ``x``
    (first-seen order), side by side by ``series``: estimates with their intervals."""
    _check(rows, x, y, series)
    _check(rows, low, high)
    fig, ax = _axes(title, xlabel or x, ylabel or y)
    cats = list(dict.fromkeys(str(r[x]) for r in rows))
    groups = _series(rows, series)
    width = 0.6 / len(groups)
    for i, (name, group) in enumerate(groups):
        at = {c: n for n, c in enumerate(cats)}
        xs = [at[str(r[x])] + (i - (len(groups) - 1) / 2) * width for r in group]
        ys = [r[y] for r in group]
        err = [[max(0.0, r[y] - r[low]) for r in group], [max(0.0, r[high] - r[y]) for r in group]]
        ax.errorbar(xs, ys, yerr=err, fmt="o", markersize=4, capsize=3, linewidth=1.2,
                    color=COLOURS[i % len(COLOURS)], label=name or None)
    _category_ticks(ax, cats)
    ax.set_xlim(-0.6, len(cats) - 0.4)
    ax.grid(False, axis="x")
    _linear_axis(ax.yaxis)
    _legend(ax, len(groups))
    return fig


def box_figure(rows: Sequence[dict], group: str, value: str, *, series: str | None = None,
               title: str = "", xlabel: str = "", ylabel: str = "") -> Figure:
    """Box plots (quartiles, whiskers at 1.5 IQR, outliers as points) of ``value`` for
    each ``group`` (first-seen order), one box per ``series`` side by side."""
    _check(rows, group, value, series)
    fig, ax = _axes(title, xlabel or group, ylabel or value)
    cats = list(dict.fromkeys(str(r[group]) for r in rows))
    groups = _series(rows, series)
    width = 0.8 / len(groups)
    for i, (name, members) in enumerate(groups):
        data, positions = [], []
        for c, cat in enumerate(cats):
            values = [r[value] for r in members if str(r[group]) == cat and r[value] is not None]
            if values:
                data.append(values)
                positions.append(c + (i - (len(groups) - 1) / 2) * width)
        colour = COLOURS[i % len(COLOURS)]
        ax.boxplot(data, positions=positions, widths=width * 0.85, patch_artist=True,
                   manage_ticks=False,
                   boxprops={"facecolor": colour + "55", "edgecolor": colour},
                   medianprops={"color": colour, "linewidth": 2},
                   whiskerprops={"color": colour}, capprops={"color": colour},
                   flierprops={"marker": "o", "markersize": 3, "markeredgecolor": colour})
        ax.plot([], [], color=colour, linewidth=6, alpha=0.5, label=name or None)
    _category_ticks(ax, cats)
    ax.set_xlim(-0.6, len(cats) - 0.4)
    ax.grid(False, axis="x")
    _linear_axis(ax.yaxis)
    _legend(ax, len(groups))
    return fig


def histogram_rows(values: Iterable[float], *, bins: int = 20, lo: float = 0.0, hi: float = 1.0,
                   **extra) -> list[dict]:
    """Rows ``{bin_low, bin_high, bin_mid, fraction, count, **extra}`` of a histogram of
    ``values`` on ``[lo, hi]`` (the last bin closed), for :func:`line_figure` or
    :func:`bar_figure`."""
    values = list(values)
    counts = [0] * bins
    step = (hi - lo) / bins
    for v in values:
        counts[min(bins - 1, max(0, int((v - lo) / step)))] += 1
    total = max(1, len(values))
    return [{**extra, "bin_low": lo + k * step, "bin_high": lo + (k + 1) * step,
             "bin_mid": lo + (k + 0.5) * step, "count": c, "fraction": c / total}
            for k, c in enumerate(counts)]


# --- output ------------------------------------------------------------------------------


def render(fig: Figure, fmt: str) -> bytes:
    """``fig`` as a complete SVG, PNG or PDF file (deterministic bytes)."""
    if fmt not in ("svg", "png", "pdf"):
        raise ValueError(f"unknown figure format {fmt!r} (svg, png, pdf)")
    buf = io.BytesIO()
    with rc_context({**STYLE, **_RC}):  # ticks made at draw time get the colours too
        fig.savefig(buf, format=fmt, metadata=_METADATA[fmt],
                    **({"dpi": PNG_DPI} if fmt == "png" else {}))
    return buf.getvalue()


def svg_inline(fig: Figure, *, title: str = "") -> str:
    """The SVG element alone (no XML declaration or DOCTYPE), scaling to its container,
    with ``role="img"`` and the title as its accessible name, to put in a page."""
    text = render(fig, "svg").decode("utf-8")
    start = text.index("<svg")
    svg = text[start:]
    head_end = svg.index(">")
    head = svg[:head_end]
    for attr in ("width", "height"):
        i = head.find(f' {attr}="')
        if i >= 0:
            j = head.index('"', i + len(attr) + 3)
            head = head[:i] + head[j + 1:]
    label = (title or "").replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")
    # its own fill and background: a dark page's CSS fills unfilled SVG with its light ink
    head += (f' role="img" aria-label="{label}" fill="{INK}" '
             f'style="max-width:100%;height:auto;background:{PAPER};color:{INK}"')
    return head + svg[head_end:]


def csv_text(rows: Sequence[dict], columns: Sequence[str] | None = None) -> str:
    """The rows behind a figure as CSV with a header (columns in the given or first-seen
    order; floats written with ``repr`` so no digit is lost)."""
    if columns is None:
        columns = list(dict.fromkeys(k for r in rows for k in r))
    buf = io.StringIO()
    writer = spreadsheet_writer(buf)  # labels such as "-x" or "=x" stay text
    writer.writerow(columns)
    for r in rows:
        writer.writerow(["" if r.get(c) is None else r[c] for c in columns])
    return buf.getvalue()
