"""The seed paper's figures drawn from their rows: what each figure puts where."""
from __future__ import annotations

import numpy as np
import pytest
from matplotlib.collections import PathCollection

from common import figures as base
from pooling import figures


def growth_rows():
    rows = []
    for sources, x in (("users", 0.7), ("systems", 0.5)):
        for d in (10, 100):
            for n in range(1, 9):
                rows.append({"sources": sources, "depth": d, "n": n, "topics": 3,
                             "mean_size": 0.8 * d * n ** x, "fit_c": 0.8, "fit_x": x,
                             "fit_r2": 1.0, "fit_max_n": 5})
    return rows


def test_figure1_systems_on_top_users_below_one_line_per_depth_with_the_fit():
    fig = figures.pool_growth_figure(growth_rows())
    top, bottom = fig.axes
    assert (top.get_xlabel(), bottom.get_xlabel()) == ("number of systems", "number of users")
    assert top.get_xscale() == top.get_yscale() == "log" == bottom.get_xscale()
    assert [t.get_text() for t in bottom.get_legend().get_texts()] == [
        "d = 10, x = 0.70", "d = 100, x = 0.70"]
    solid = [ln for ln in bottom.get_lines() if ln.get_linestyle() == "-"]
    dashed = [ln for ln in bottom.get_lines() if ln.get_linestyle() == "--"]
    assert len(solid) == 2 and len(dashed) == 2
    # the dashed fit spans n = 1..fit_max_n and is c·d·n^x
    xs, ys = dashed[1].get_data()
    assert list(xs) == [1, 2, 3, 4, 5]
    assert np.allclose(ys, [0.8 * 100 * n ** 0.7 for n in range(1, 6)])
    base.render(fig, "svg")


def test_figure1_draws_only_the_sources_it_has_and_needs_one():
    fig = figures.pool_growth_figure([r for r in growth_rows() if r["sources"] == "users"])
    assert len(fig.axes) == 1 and fig.axes[0].get_xlabel() == "number of users"
    with pytest.raises(ValueError, match="sources 'systems' or 'users'"):
        figures.pool_growth_figure([{"sources": "combined", "depth": 1, "n": 1, "mean_size": 1}])


def test_figure2_one_outline_per_group_on_0_to_1():
    rows = (base.histogram_rows([0.1, 0.2, 0.2], bins=10, pairs="users vs reference")
            + base.histogram_rows([0.8, 0.9], bins=10, pairs="system vs system"))
    fig = figures.rbo_distribution_figure(rows)
    ax = fig.axes[0]
    assert ax.get_xlim() == (0.0, 1.0)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "users vs reference", "system vs system"]


def rank_rows():
    judgments = ["relevant", "unjudged", "irrelevant", "unjudged", "relevant", "unjudged"]
    return [{"topic": "7", "position": k, "docid": f"d{k}", "weight": 1 / k,
             "min_rank": [1, 1, 3, 2, 8, 40][k - 1], "judgment": j}
            for k, j in enumerate(judgments, start=1)]


def test_figure3_weight_order_on_x_shallowest_rank_on_y_every_document_grey():
    fig = figures.rank_weight_figure(rank_rows(), title="topic 7")
    ax = fig.axes[0]
    assert ax.get_xlabel() == "documents in order of summed RBP weight"
    assert ax.get_ylabel() == "shallowest rank in any run" and ax.get_yscale() == "log"
    grey, rel, irr = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert grey.get_offsets().tolist() == [[k, r] for k, r in
                                           zip(range(1, 7), [1, 1, 3, 2, 8, 40])]
    assert rel.get_offsets().tolist() == [[1, 1], [5, 8]]
    assert irr.get_offsets().tolist() == [[3, 3]]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "pooled (6)", "relevant (2)", "irrelevant (1)"]
    assert ax.get_legend().get_title().get_text() == "unjudged: 3"
    base.render(fig, "png")


def test_pool_size_figure_sorts_only_when_topics_are_many():
    few = [{"topic": t, "documents": n} for t, n in (("1", 3), ("2", 9))]
    assert [p.get_height() for p in figures.pool_size_figure(few).axes[0].patches] == [3, 9]
    many = [{"topic": str(i), "documents": i % 13} for i in range(100)]
    fig = figures.pool_size_figure(many)
    heights = [p.get_height() for p in fig.axes[0].patches]
    assert heights == sorted(heights, reverse=True)
    assert fig.axes[0].get_xlabel() == "topic (largest pool first)"
