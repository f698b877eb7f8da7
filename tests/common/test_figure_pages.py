"""Figures on pages: inline SVG with download links that repeat the page's own query."""
import pytest
from django.http import Http404
from django.test import RequestFactory

from common import figures
from common.figure_pages import PagePlot, download, figure_html

ROWS = [{"topic": "1", "documents": 3}, {"topic": "2", "documents": 5}]
PLOTS = {"sizes": PagePlot("Pool size", ROWS, lambda rows: figures.bar_figure(rows, "topic", "documents"))}


def test_inline_svg_and_links_keep_the_query():
    request = RequestFactory().get("/pooling/pools/p/", {"qrels": "web 2011"})
    html = figure_html(request, "sizes", PLOTS["sizes"])
    assert html.startswith("<svg") and "<figcaption>Pool size · download" in html
    assert '<a href="?qrels=web+2011&amp;figure=sizes&amp;format=png">PNG</a>' in html
    assert download(request, PLOTS, "pool") is None


@pytest.mark.parametrize("fmt,ctype,start", [("png", "image/png", b"\x89PNG"), ("pdf", "application/pdf", b"%PDF"),
                                             ("svg", "image/svg+xml", b"<?xml"),
                                             ("csv", "text/csv; charset=utf-8", b"topic,documents\n1,3\n2,5\n")])
def test_downloads(fmt, ctype, start):
    response = download(RequestFactory().get("/", {"figure": "sizes", "format": fmt}), PLOTS, "pool-p")
    assert response["Content-Type"] == ctype and response.content.startswith(start)
    assert response["Content-Disposition"] == f'attachment; filename="pool-p-sizes.{fmt}"'


def test_unknown_figure_or_format_is_404():
    for query in ({"figure": "nope", "format": "png"}, {"figure": "sizes", "format": "gif"}):
        with pytest.raises(Http404):
            download(RequestFactory().get("/", query), PLOTS, "pool")
