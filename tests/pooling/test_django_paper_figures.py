"""The seed paper's figures and tables over the small stored collection of
test_django_pools: the pool_analysis subcommands, the gallery page and the pool page's
Figure 3. Values are worked by hand from USER_RANKINGS, SYSTEM_RANKINGS and small_qrels."""
from __future__ import annotations

import csv
import io
import json
import re
from xml.etree import ElementTree

import pytest
from django.core.management.base import CommandError
from django.urls import reverse

from tests.pooling.test_commands_pools import run
from tests.pooling.test_django_analysis import small_qrels, staff_client  # noqa: F401
from tests.pooling.test_django_pools import rankings_db  # noqa: F401

pytestmark = pytest.mark.django_db

# depth-2 pools: systems 1 {c d f} 2 {a}; users 1 {a b c f} 2 {b d}; combined 1 {a b c d f}
# 2 {a b d}. small_qrels: topic 1 a relevant, c irrelevant; topic 2 b junk (irrelevant).
TABLE1 = [
    # systems: topic 1 (0, 1/3, 2/3), topic 2 (0, 0, 1)
    {"source": "systems", "depth": 2, "size": 2.0, "relevant": 0.0, "irrelevant": 1 / 6,
     "unjudged": 5 / 6},
    # users: topic 1 (1/4, 1/4, 1/2), topic 2 (0, 1/2, 1/2)
    {"source": "users", "depth": 2, "size": 3.0, "relevant": 0.125, "irrelevant": 0.375,
     "unjudged": 0.5},
    # combined: topic 1 (1/5, 1/5, 3/5), topic 2 (0, 1/3, 2/3)
    {"source": "combined", "depth": 2, "size": 4.0, "relevant": 0.1,
     "irrelevant": (0.2 + 1 / 3) / 2, "unjudged": (0.6 + 2 / 3) / 2},
]


def test_table1_json_has_one_row_per_source_with_hand_computed_values(rankings_db, small_qrels):
    got = json.loads(run("pool_analysis", "table1", "--topic-set", "ts", "--depth", "2",
                         "--qrels", "small", "--json"))
    assert [set(r) for r in got["rows"]] == [set(TABLE1[0])] * 3
    assert got["rows"] == [pytest.approx(r) for r in TABLE1]
    assert got["topics"] == {"systems": 2, "users": 2, "combined": 2}
    # depth 1: systems 1 {c d} 2 {a}; users 1 {c f} 2 {b}; combined 1 {c d f} 2 {a b}
    d1 = json.loads(run("pool_analysis", "table1", "--topic-set", "ts", "--depth", "1",
                        "--qrels", "small", "--json"))["rows"]
    assert [(r["source"], r["size"]) for r in d1] == [("systems", 1.5), ("users", 1.5),
                                                      ("combined", 2.5)]
    assert d1[1]["irrelevant"] == pytest.approx((0.5 + 1.0) / 2)


def test_table1_csv_and_only_the_sources_with_rankings(rankings_db, small_qrels):
    text = run("pool_analysis", "table1", "--topic-set", "ts", "--depth", "2", "--qrels", "small")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["source"] for r in rows] == ["systems", "users", "combined"]
    assert float(rows[1]["unjudged"]) == 0.5
    run("build_pool", "--topic-set", "ts", "--sources", "users", "--depth", "2", "--name", "u2")
    got = json.loads(run("pool_analysis", "table1", "--pool", "u2", "--depth", "2",
                         "--qrels", "small", "--json"))
    # the pool's runs hold user rankings only: no systems row, combined = users
    assert [r["source"] for r in got["rows"]] == ["users", "combined"]
    assert got["rows"][0] == pytest.approx(TABLE1[1])
    assert got["rows"][1] == pytest.approx({**TABLE1[1], "source": "combined"})


def test_table1_errors_say_what_to_fix(rankings_db, small_qrels):
    with pytest.raises(CommandError, match="no qrels"):
        run("pool_analysis", "table1", "--topic-set", "ts", "--depth", "2", "--qrels", "nope")
    with pytest.raises(CommandError, match="has no stored user rankings of model 'bm99'"):
        run("pool_analysis", "table1", "--topic-set", "ts", "--depth", "2", "--qrels", "small",
            "--model", "bm99")
    with pytest.raises(CommandError, match="at least 1"):
        run("pool_analysis", "table1", "--topic-set", "ts", "--depth", "0", "--qrels", "small")


# pool c2 (combined, depth 2, p = 0.95): RBP weights 0.05·0.95^(r-1) per answer —
# topic 1: c .1975, f .0975, a .095, d .05, b .0475; topic 2: a .05 = b .05 (docid), d .0475
FIGURE3 = [
    ["1", "1", "doc-c", "1", "irrelevant"], ["1", "2", "doc-f", "1", "unjudged"],
    ["1", "3", "doc-a", "2", "relevant"], ["1", "4", "doc-d", "1", "unjudged"],
    ["1", "5", "doc-b", "2", "unjudged"], ["2", "1", "doc-a", "1", "unjudged"],
    ["2", "2", "doc-b", "1", "irrelevant"], ["2", "3", "doc-d", "2", "unjudged"],
]


def test_figure3_rows_in_weight_order_with_judgments(rankings_db, small_qrels, tmp_path):
    run("build_pool", "--topic-set", "ts", "--sources", "combined", "--depth", "2",
        "--name", "c2")
    out = tmp_path / "f3.pdf"
    text = run("pool_analysis", "figure3", "c2", "--qrels", "small", "--figure", str(out))
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0]) == ["topic", "position", "docid", "weight", "min_rank", "judgment"]
    assert [[r["topic"], r["position"], r["docid"], r["min_rank"], r["judgment"]]
            for r in rows] == FIGURE3
    assert float(rows[0]["weight"]) == pytest.approx(0.1975)
    assert out.read_bytes().startswith(b"%PDF")
    one = json.loads(run("pool_analysis", "figure3", "c2", "--qrels", "small", "--topic", "2",
                         "--limit", "2", "--json"))
    assert [(r["docid"], r["position"]) for r in one["rows"]] == [("doc-a", 1), ("doc-b", 2)]
    with pytest.raises(CommandError, match="has no topic '9'"):
        run("pool_analysis", "figure3", "c2", "--qrels", "small", "--topic", "9")


def test_figure1_and_figure2_write_their_csv_and_draw(rankings_db, tmp_path):
    png = tmp_path / "f1.png"
    text = run("pool_analysis", "figure1", "--topic-set", "ts", "--depths", "1", "2",
               "--orders", "3", "--figure", str(png))
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0]) == ["sources", "depth", "n", "topics", "mean_size", "fit_c", "fit_x",
                             "fit_r2", "fit_max_n"]
    # systems: 2 runs, users: 3 answers, at two depths each; systems come first (the top)
    assert len(rows) == 2 * 2 + 2 * 3 and rows[0]["sources"] == "systems"
    assert png.read_bytes().startswith(b"\x89PNG")
    svg = tmp_path / "f2.svg"
    got = json.loads(run("pool_analysis", "figure2", "--topic-set", "ts", "--bins", "4",
                         "--figure", str(svg), "--json"))
    assert [(r["pairs"], r["count"]) for r in got["rows"]][:1] == [("users vs reference", 0)]
    assert sum(r["count"] for r in got["rows"] if r["pairs"] == "system vs system") == 1
    assert sum(r["count"] for r in got["rows"] if r["pairs"] == "users vs reference") == 3
    ElementTree.parse(svg)
    with pytest.raises(CommandError, match=r"\.svg, \.png or \.pdf"):
        run("pool_analysis", "figure2", "--topic-set", "ts", "--figure", str(tmp_path / "x.gif"))
    assert not (tmp_path / "x.gif").exists()


def test_gallery_shows_each_figure_beside_the_paper(rankings_db, small_qrels, staff_client):
    run("build_pool", "--topic-set", "ts", "--sources", "combined", "--depth", "2",
        "--name", "c2")
    url = reverse("pooling:paper_figures")
    query = "?topic_set=ts&qrels=small&depth=2&depths=1,2&orders=2"
    r = staff_client.get(url + query)
    assert r.status_code == 200
    body = r.content.decode()
    assert body.count("In the paper.") == 4 and "<nav>" in body
    svgs = re.findall(r"<svg.*?</svg>", body, flags=re.S)
    assert len(svgs) == 3
    for svg in svgs:
        assert ElementTree.fromstring(svg).get("fill")  # its own ink on a dark page
    assert "Figure 3: topic 1, pool c2 (small)" in body
    assert "0.375" in body and "0.633" in body  # Table 1: users irrelevant, combined unjudged
    csv3 = staff_client.get(url + query + "&figure=figure3&format=csv").content.decode()
    assert csv3.splitlines()[0] == "topic,position,docid,weight,min_rank,judgment"
    assert len(csv3.splitlines()) == 1 + 5  # topic 1 only
    table = staff_client.get(url + query + "&table=table1")
    assert table["Content-Type"].startswith("text/csv")
    assert [r["source"] for r in csv.DictReader(io.StringIO(table.content.decode()))] == [
        "systems", "users", "combined"]
    png = staff_client.get(url + query + "&figure=figure1&format=png")
    assert png.content.startswith(b"\x89PNG")
    # without qrels the other figures still show, and the page says what is missing
    body = staff_client.get(url + "?topic_set=ts&depths=2&orders=2").content.decode()
    assert body.count("<svg") == 2 and "choose qrels to compare with" in body


def test_gallery_is_for_organisers_only(rankings_db, client, django_user_model):
    url = reverse("pooling:paper_figures") + "?topic_set=ts"
    assert client.get(url).status_code == 302  # to sign in
    client.force_login(django_user_model.objects.create_user("assessor",
                                                             password="pw-assessor-1"))
    assert client.get(url).status_code in (302, 403)


def test_pool_page_draws_one_topic_as_the_paper(rankings_db, small_qrels, staff_client):
    run("build_pool", "--topic-set", "ts", "--sources", "combined", "--depth", "2",
        "--name", "c2")
    url = reverse("pooling:pool_detail", args=["c2"])
    one = staff_client.get(url, {"qrels": "small", "topic": "1", "figure": "scatter",
                                 "format": "csv"}).content.decode()
    assert [line.split(",")[2] for line in one.splitlines()[1:]] == [
        "doc-c", "doc-f", "doc-a", "doc-d", "doc-b"]
    page = staff_client.get(url, {"qrels": "small", "topic": "9"}).content.decode()
    assert "has no topic" in page and page.count("<svg") == 1
