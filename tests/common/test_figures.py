"""Figures: readable ticks, deterministic files in every format, the CSV behind them."""
import csv
import re
import io
import subprocess
import sys

import pytest

from common import figures


def visible_ticks(fig, axis="x"):
    """The labelled ticks inside the axis limits after a draw."""
    figures.render(fig, "svg")  # lays the figure out
    ax = fig.axes[0]
    lo, hi = sorted(ax.get_xlim() if axis == "x" else ax.get_ylim())
    ticks = ax.get_xticks() if axis == "x" else ax.get_yticks()
    fmt = (ax.xaxis if axis == "x" else ax.yaxis).get_major_formatter()
    return [fmt(t) for t in ticks if lo - 1e-12 <= t <= hi + 1e-12]


GROWTH = [{"contributors": n, "size": 10 * n ** 0.7, "sources": s}
          for s in ("users", "systems") for n in (1, 2, 3, 5, 8, 13, 21, 40, 63)]


def test_log_axes_are_ticked_at_1_2_5():
    fig = figures.line_figure(GROWTH, "contributors", "size", series="sources", xlog=True, ylog=True)
    assert visible_ticks(fig, "x") == ["1", "2", "5", "10", "20", "50"]
    assert visible_ticks(fig, "y") == ["10", "20", "50", "100", "200"]  # 10 to 182


def test_linear_axes_have_round_ticks():
    # the hand-written plotter labelled this axis 0, 15.8, 31.5, 47.2, 63
    rows = [{"x": i, "y": i * 63 / 4} for i in range(5)]
    fig = figures.line_figure(rows, "x", "y")
    assert visible_ticks(fig, "y") == ["0", "20", "40", "60"]
    rows = [{"x": i, "y": 0.31 + i * 0.02} for i in range(5)]
    assert visible_ticks(figures.line_figure(rows, "x", "y"), "y") == ["0.32", "0.34", "0.36", "0.38"]


@pytest.mark.parametrize("value,label", [(1.0, "1"), (2.5, "2.5"), (0.05, "0.05"), (2000.0, "2000"),
                                         (0.30000000000000004, "0.3"), (1e-5, "1e-5"), (0.0002, "0.0002"), (3e9, "3e9"),
                                         (0.0, "0")])
def test_tick_labels_are_plain_numbers(value, label):
    assert figures.tick_label(value) == label


def test_titles_labels_and_legend():
    fig = figures.line_figure(GROWTH, "contributors", "size", series="sources", title="Pool growth",
                              xlabel="contributors (log)", ylabel="pool size")
    ax = fig.axes[0]
    assert ax.get_title() == "Pool growth"
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("contributors (log)", "pool size")
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["users", "systems"]
    assert fig.get_size_inches()[0] >= 7


def test_every_format_is_deterministic_and_well_formed():
    def make():
        return figures.line_figure(GROWTH, "contributors", "size", series="sources", xlog=True, ylog=True,
                                   title="growth")

    svg, png, pdf = (figures.render(make(), f) for f in ("svg", "png", "pdf"))
    assert svg.startswith(b"<?xml") and b"<svg" in svg and b"<dc:date>" not in svg
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert pdf.startswith(b"%PDF-") and b"CreationDate" not in pdf
    assert [figures.render(make(), f) for f in ("svg", "png", "pdf")] == [svg, png, pdf]
    with pytest.raises(ValueError, match="unknown figure format 'gif'"):
        figures.render(make(), "gif")


def test_inline_svg_is_an_element_that_scales():
    fig = figures.bar_figure([{"topic": "1", "size": 3}, {"topic": "2", "size": 5}], "topic", "size",
                             title='sizes <&> "x"')
    svg = figures.svg_inline(fig, title='sizes <&> "x"')
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    head = svg[: svg.index(">")]
    assert " width=" not in head and " height=" not in head and "viewBox" in head
    assert 'aria-label="sizes &lt;&amp;&gt; &quot;x&quot;"' in head


def test_box_and_scatter_figures():
    rows = [{"topic": t, "kind": k, "score": v}
            for t in ("1", "2") for k, vals in (("variants", [0.1, 0.5, 0.9]), ("systems", [0.4, 0.6]))
            for v in vals]
    fig = figures.box_figure(rows, "topic", "score", series="kind", title="spread")
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["1", "2"]
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["variants", "systems"]
    sc = figures.scatter_figure([{"a": 0.1, "b": 0.2, "s": "x"}, {"a": 0.3, "b": 0.25, "s": "y"}], "a", "b",
                                diagonal=True, labels="s")
    assert figures.render(sc, "svg")


def test_bad_rows_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="at least one row"):
        figures.line_figure([], "x", "y")
    with pytest.raises(ValueError, match="no column 'z'"):
        figures.line_figure([{"x": 1, "y": 2}], "x", "z")
    with pytest.raises(ValueError, match="log axis cannot show y = 0"):
        figures.line_figure([{"x": 1, "y": 0}], "x", "y", ylog=True)


def test_csv_holds_the_rows_exactly():
    rows = [{"queries": 50, "intents": 2, "var_mean": 0.1 + 0.2}, {"queries": 25, "intents": 4, "var_mean": None}]
    text = figures.csv_text(rows)
    assert text == "queries,intents,var_mean\n50,2,0.30000000000000004\n25,4,\n"
    back = list(csv.DictReader(io.StringIO(text)))
    assert float(back[0]["var_mean"]) == rows[0]["var_mean"]
    assert figures.csv_text(rows, ["intents"]) == "intents\n2\n4\n"


def test_histogram_rows():
    rows = figures.histogram_rows([0.0, 0.05, 0.5, 1.0], bins=4, kind="user")
    assert [r["count"] for r in rows] == [2, 0, 1, 1]
    assert rows[0] == {"kind": "user", "bin_low": 0.0, "bin_high": 0.25, "bin_mid": 0.125, "count": 2,
                       "fraction": 0.5}


def test_no_django_and_no_pyplot():
    code = ("import sys; import common.figures; "
            "assert 'django' not in sys.modules, 'django'; "
            "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot'")
    subprocess.run([sys.executable, "-c", code], check=True, env={"PYTHONPATH": "."})


def test_figures_bring_their_own_ink_and_paper_for_dark_pages():
    """Pico fills an unfilled SVG with the page colour (light in dark mode): the inline SVG
    names its fill and background, and every text names its ink."""
    fig = figures.line_figure(GROWTH, "contributors", "size", series="sources", xlog=True,
                              ylog=True, title="growth", xlabel="contributors", ylabel="size")
    svg = figures.svg_inline(fig, title="growth")
    head = svg[: svg.index(">")]
    assert f'fill="{figures.INK}"' in head and f"background:{figures.PAPER}" in head
    texts = re.findall(r"<text [^>]*>", svg)
    assert len(texts) > 10  # title, labels, ticks, legend
    assert all(f"fill: {figures.INK}" in t for t in texts), [t for t in texts if "fill" not in t][:2]
    assert svg.count('style="fill: #ffffff"') >= 2  # the figure's and the axes' own paper


def test_many_categories_are_labelled_every_kth_and_can_be_sorted():
    rows = [{"topic": f"UQV100.{i:03d}", "documents": (i * 37) % 101} for i in range(225)]
    fig = figures.bar_figure(rows, "topic", "documents", sort=True)
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert 20 <= len(labels) <= figures.MAX_CATEGORY_LABELS
    heights = [p.get_height() for p in fig.axes[0].patches]
    assert len(heights) == 225 and heights == sorted(heights, reverse=True)
    tallest = max(rows, key=lambda r: r["documents"])["topic"]
    assert labels[0] == tallest  # the first bar is labelled, and it is the largest pool
    few = figures.bar_figure(rows[:5], "topic", "documents")
    assert [t.get_text() for t in few.axes[0].get_xticklabels()] == [r["topic"] for r in rows[:5]]
