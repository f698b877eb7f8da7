"""Figures on Django pages: the SVG inline with links to download it as PNG, PDF, SVG and
the CSV behind it, served by the same view with ``?figure=NAME&format=FMT`` added to the
page's own query (so the download is computed exactly as the page was)."""
from __future__ import annotations

from typing import Callable, NamedTuple

from django.http import Http404, HttpResponse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from common import figures


class PagePlot(NamedTuple):
    title: str
    rows: list[dict]
    draw: Callable[[list[dict]], object]  # rows -> matplotlib Figure


def attachment(body, content_type: str, filename: str) -> HttpResponse:
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def download(request, plots: dict[str, PagePlot], stem: str) -> HttpResponse | None:
    """The download asked for by ``?figure=NAME&format=FMT``, or None when the request
    asks for the page."""
    name, fmt = request.GET.get("figure"), request.GET.get("format")
    if not name:
        return None
    if name not in plots or fmt not in figures.FORMATS:
        raise Http404(f"no figure {name!r} in format {fmt!r}")
    plot = plots[name]
    body = figures.csv_text(plot.rows) if fmt == "csv" else figures.render(plot.draw(plot.rows), fmt)
    return attachment(body, figures.FORMATS[fmt], f"{stem}-{name}.{fmt}")


def figure_html(request, name: str, plot: PagePlot) -> SafeString:
    """The inline SVG of a plot followed by its download links."""
    query = request.GET.copy()
    links = []
    for fmt, label in (("png", "PNG"), ("pdf", "PDF"), ("svg", "SVG"), ("csv", "CSV (data)")):
        query["figure"], query["format"] = name, fmt
        links.append(f'<a href="?{escape(query.urlencode())}">{label}</a>')
    svg = figures.svg_inline(plot.draw(plot.rows), title=plot.title)
    return mark_safe(f'{svg}<figcaption>{escape(plot.title)} · download {" ".join(links)}</figcaption>')
