"""Messages the services write for the command line, as a page says them.

The services' errors name the management commands and flags that fix them (``import_run``,
``--source variants``), which is right in a terminal; a page says instead what to do in the
browser, with a link to the page that does it. :func:`web_message` rewrites the known
phrases and escapes the rest.
"""
from __future__ import annotations

from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe


def _link(route: str, text: str) -> str:
    return f'<a href="{escape(reverse(route))}">{escape(text)}</a>'


def _phrases() -> list[tuple[str, str]]:
    """(command-line phrase, the page's words in HTML), longest phrases first."""
    upload_run = _link("projects:organiser_run_upload", "upload a system run")
    launch = _link("projects:organiser_retrieval_launch", "launch retrieval")
    upload_collection = _link("projects:organiser_collection_upload", "upload the collection")
    return [
        ("to leave such documents out, skip empty documents (--skip-empty)",
         f"to leave such documents out, {upload_collection} again with the “Skip empty” "
         "box (skip_empty) ticked"),
        ("import a system run (import_run) first",
         f"{upload_run}, or {launch} with “also run the model over titles as system runs” "
         "and choose the title runs when building the pool"),
        ("import one with import_run", f"{upload_run}, or {launch} over the topic titles"),
        ("run retrieval over the variants (run_retrieval --source variants) first",
         f"{launch} with the user query variants as source first"),
        ("run_retrieval --source variants first",
         f"{launch} with the user query variants as source first"),
        ("give --adhoc-intent I", "export one intent's labels as adhoc instead (the "
         "“adhoc (intent 1)” link of the task page, or ?adhoc_intent=I)"),
        ("--adhoc-intent is only for --format adhoc", "?adhoc_intent is only for the adhoc export"),
        ("(try --source titles)", "(choose the topic titles as source)"),
        ("(try --source descriptions)", "(choose the topic descriptions as source)"),
    ]


def web_message(text) -> SafeString:
    """``text`` escaped, with the command-line phrases it holds said as a page says them."""
    out = escape(str(text))
    for phrase, html in _phrases():
        out = out.replace(escape(phrase), html)
    return mark_safe(out)
