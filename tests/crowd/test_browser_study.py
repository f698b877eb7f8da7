"""A worker completes a study in a real headless Chromium, from a Prolific link to the code."""
import itertools

import pytest

from crowd.models import Participant
from tests.browser import BROWSER_MARKS, chromium
from tests.crowd.study_helpers import make_study, make_topic_set
from topics.models import QueryVariant

pytestmark = BROWSER_MARKS


@pytest.fixture
def browser():
    with chromium() as driver:
        yield driver


@pytest.mark.django_db(transaction=True)
def test_worker_completes_study_from_prolific_link(live_server, browser):
    try:
        _complete_study(live_server, browser)
    except Exception:
        # shown by pytest on failure: where the browser was and what it showed
        print("URL:", browser.current_url)
        print(browser.page_source[:4000])
        raise


def _complete_study(live_server, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from selenium.common.exceptions import WebDriverException

    marks = itertools.count()

    def wait_new_document(action):
        """Run ``action`` (a click, back) and wait until another document has loaded."""
        mark = f"m{next(marks)}"  # a page restored from the back/forward cache keeps its own
        browser.execute_script("window.__pageMark = arguments[0];", mark)
        action()
        WebDriverWait(browser, 30, ignored_exceptions=(WebDriverException,)).until(
            lambda d: d.execute_script(
                "return window.__pageMark !== arguments[0] && document.readyState === 'complete'",
                mark)
        )

    def submit_and_wait(button_id):
        """Click a submit button and wait until the next page has replaced this one."""
        wait_new_document(browser.find_element(By.ID, button_id).click)
        WebDriverWait(browser, 30).until(
            lambda d: d.find_elements(By.ID, "statement") or d.find_elements(By.ID, "completion-code")
            or d.find_elements(By.ID, "failed")
        )

    study = make_study(make_topic_set(4), responses_per_statement=2, statements_per_worker=3,
                       question_text="How many useful documents would you need?",
                       question_choices="0\n1\n2\n3-5")
    url = (f"{live_server.url}/crowd/s/{study.slug}/"
           "?PROLIFIC_PID=5f1e2d3c4b5a69788796a5b4&STUDY_ID=st1&SESSION_ID=se1")
    browser.get(url)
    assert "Consent: you agree." in browser.find_element(By.ID, "consent").text
    assert "C0DE-1234" not in browser.page_source
    browser.find_element(By.ID, "id_agree").click()
    submit_and_wait("start")

    typed = []
    copy_tried = False
    for step in range(10):  # 3 statements + 1 attention check; bounded
        if browser.find_elements(By.ID, "completion-code"):
            break
        prompt = browser.find_element(By.ID, "statement").text
        box = browser.find_element(By.ID, "query")
        if not copy_tried and "purple" not in prompt:
            # a copy of the statement is refused with a message, and nothing is stored
            copy_tried = True
            box.send_keys(prompt)
            browser.find_element(By.CSS_SELECTOR, "#estimate input[value='2']").click()
            submit_and_wait("submit")
            assert "not a copy" in browser.find_element(By.CSS_SELECTOR, ".query-error").text
            assert browser.find_element(By.ID, "statement").text == prompt
        if step == 1:
            # opening the Prolific link again resumes at the same item
            browser.get(url)
            assert browser.find_element(By.ID, "statement").text == prompt
            browser.refresh()
            assert browser.find_element(By.ID, "statement").text == prompt
        box = browser.find_element(By.ID, "query")
        box.clear()
        answer = "purple" if "purple" in prompt else f"<i>query</i> {step} about it"
        typed.append(answer)
        box.send_keys(answer)
        browser.find_element(By.CSS_SELECTOR, "#estimate input[value='3-5']").click()
        submit_and_wait("submit")
    code = browser.find_element(By.ID, "completion-code").text
    assert code == "C0DE-1234"
    # the back button shows an answered item, and submitting it again adds nothing
    wait_new_document(browser.back)
    WebDriverWait(browser, 30).until(
        lambda d: d.find_elements(By.ID, "submit") or d.find_elements(By.ID, "completion-code")
    )
    if browser.find_elements(By.ID, "submit"):
        submit_and_wait("submit")
    assert browser.find_element(By.ID, "completion-code").text == "C0DE-1234"
    p = Participant.objects.get(study=study)
    assert p.worker_id == "5f1e2d3c4b5a69788796a5b4" and p.status == "completed"
    variants = QueryVariant.objects.filter(source="crowd")
    assert variants.count() == 3
    assert sorted(v.raw for v in variants) == sorted(t for t in typed if t != "purple")
    assert {v.estimate for v in variants} == {"3-5"}
