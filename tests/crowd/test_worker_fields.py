"""The worker pages write their form fields in the template (the hot path of a study):
the same controls, names, ids, labels and accessibility attributes as the Django forms
that validate them would render."""
from html.parser import HTMLParser

import pytest
from django.test import Client

from crowd import quality
from crowd.forms import AnswerForm, ConsentForm
from tests.crowd.study_helpers import arrive, consent, item_url, make_study

pytestmark = pytest.mark.django_db


class _Controls(HTMLParser):
    """(tag, sorted attributes) of every input and label, in order (no CSRF token)."""

    def __init__(self, html):
        super().__init__()
        self.found = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        if tag in ("input", "label") and ("name", "csrfmiddlewaretoken") not in attrs:
            self.found.append((tag, sorted(attrs, key=lambda kv: kv[0])))


def _form_part(html, form_id):
    start = html.index(f'id="{form_id}"')
    return html[start:html.index("</form>", start)]


def _page_controls(response, form_id="answer-form", skip_labels=("query",)):
    found = _Controls(_form_part(response.content.decode(), form_id)).found
    # the query's label is written by the page itself (its wording is the page's)
    return [c for c in found if not (c[0] == "label" and ("for", skip_labels[0]) in c[1])]


def _django_controls(form, *names):
    return _Controls("".join(str(form[name]) for name in names)).found


QUESTION = "How many useful documents?"


@pytest.mark.parametrize("choices", ["0\n1\n2\n3-5", ""])
def test_item_page_fields_match_the_answer_form(client, choices):
    study = make_study(attention=False, question_text=QUESTION, question_choices=choices)
    arrive(client, study, "F")
    consent(client, study)
    form = AnswerForm(question=QUESTION, choices=study.question_choice_list())
    page = client.get(item_url(study, 1))
    assert _page_controls(page) == _django_controls(form, "query", "estimate")
    assert f"<legend>{QUESTION}</legend>" in page.content.decode()
    # refused (empty query; the question answered): the worker's values come back, with
    # the reasons tied to the fields
    data = {"query": "", "estimate": study.question_choice_list()[1] if choices else "7"}
    page = client.post(item_url(study, 1), data)
    assert page.status_code == 200
    bound = AnswerForm(data, question=QUESTION, choices=study.question_choice_list())
    bound.is_valid()
    bound.add_error("query", quality.MESSAGES[quality.EMPTY])
    assert _page_controls(page) == _django_controls(bound, "query", "estimate")
    html = page.content.decode()
    assert '<div id="id_query_error"><p class="error query-error">Please type a query.</p></div>' in html


def test_item_page_without_a_question_has_only_the_query(client):
    study = make_study(attention=False)
    arrive(client, study, "F")
    consent(client, study)
    page = client.get(item_url(study, 1))
    assert _page_controls(page) == _django_controls(AnswerForm(), "query")
    assert b"<fieldset" not in page.content
    # a query written with markup comes back escaped in the refused page
    page = client.post(item_url(study, 1), {"query": "<b>" + "x" * 300})
    assert b'value="&lt;b&gt;xxx' in page.content and b"too long" in page.content


def test_consent_page_field_matches_the_consent_form():
    study = make_study(attention=False)
    c = Client()
    page = arrive(c, study, "F")
    assert _page_controls(page, "consent-form", ("-",)) == _Controls(ConsentForm().as_p()).found
    page = c.post(f"/crowd/s/{study.slug}/consent/", {})  # not ticked
    refused = ConsentForm({})
    refused.is_valid()
    assert _page_controls(page, "consent-form", ("-",)) == _Controls(refused.as_p()).found
    assert b'<ul class="errorlist" id="id_agree_error"><li>This field is required.</li></ul>' in page.content
