"""Judging in a real headless Chromium: an assessor judges by keyboard only in intent and
topic modes, revises a judgment and sees the progress move; a crowd worker goes from a
Prolific link to the completion code, at a desktop's and at a phone's width, with
screenshots kept (``crowd-judging-<width>-*.png`` in ``bench/out/screenshots/``,
``SCREENSHOT_DIR`` overrides it)."""
from __future__ import annotations

import itertools

import pytest

from judging import selectors, services
from judging.models import GoldAnswer, Label

from .conftest import make_pool
from .page_fixtures import pages_index, use_pages  # noqa: F401 (fixture)
from tests.browser import BROWSER_MARKS, DESKTOP, PHONE, chromium, screenshot_dir

pytestmark = BROWSER_MARKS


@pytest.fixture
def browser():
    with chromium() as driver:
        yield driver


class Keyboard:
    """Keys sent to the page as a person types them, and waits for the next page."""

    def __init__(self, browser):
        self.b = browser
        self.marks = itertools.count()

    def press(self, *keys):
        from selenium.webdriver.common.action_chains import ActionChains

        for k in keys:
            ActionChains(self.b).send_keys(k).perform()

    def press_and_wait(self, *keys):
        """Press keys; the last one loads another page: wait until it has."""
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.support.ui import WebDriverWait

        mark = f"m{next(self.marks)}"
        self.b.execute_script("window.__pageMark = arguments[0];", mark)
        self.press(*keys)
        WebDriverWait(self.b, 30, ignored_exceptions=(WebDriverException,)).until(
            lambda d: d.execute_script(
                "return window.__pageMark !== arguments[0] && document.readyState === 'complete'",
                mark))

    def attr(self, element_id, name):
        from selenium.webdriver.common.by import By

        return self.b.find_element(By.ID, element_id).get_attribute(name)

    def docid(self):
        from selenium.webdriver.common.by import By

        text = self.b.find_element(By.CSS_SELECTOR, "#document p.muted").text
        return text.removeprefix("Document ")


def sign_in(browser, live_server, user):
    from django.test import Client

    c = Client()
    c.force_login(user)
    browser.get(f"{live_server.url}/accounts/login/")
    browser.add_cookie({"name": "sessionid", "value": c.cookies["sessionid"].value, "path": "/"})


def shows_failure(browser):
    print("URL:", browser.current_url)
    print(browser.page_source[:4000])


@pytest.mark.django_db(transaction=True)
def test_assessor_judges_by_keyboard_revises_and_sees_progress(
        live_server, browser, pages_index, tmp_path, django_user_model):
    pool = make_pool(tmp_path)
    for name, mode in (("intents", "intent"), ("topics", "topic")):
        use_pages(services.judging_task_create(pool=pool, name=name, mode=mode, batch=3,
                                               assessors=["alice"]), pages_index)
    sign_in(browser, live_server, django_user_model.objects.create_user("alice", password="x"))
    try:
        _judge_by_keyboard(live_server, browser)
    except Exception:
        shows_failure(browser)
        raise


def _judge_by_keyboard(live_server, browser):
    kb = Keyboard(browser)
    # intent mode: a grade row per intent; a grade key fills the active row and moves on
    browser.get(f"{live_server.url}/judging/tasks/intents/")
    assert kb.attr("progress-topic", "data-done") == "0"
    assert kb.attr("progress-task", "data-done") == "0"
    first = kb.docid()
    assert "mark" in browser.find_element("id", "doc-title").get_attribute("innerHTML")
    kb.press_and_wait("2", "0", "n")
    second = kb.docid()
    assert second != first
    assert kb.attr("progress-topic", "data-done") == "1"
    assert kb.attr("progress-task", "data-done") == "1"
    assert browser.find_element("id", "mine-done").text == "1"
    kb.press_and_wait("j", "1", "\ue007")  # Enter is "next" too
    assert kb.attr("progress-topic", "data-done") == "2"
    # back: the latest judgment comes back with its grades; revise it by keyboard
    kb.press_and_wait("b")
    assert kb.docid() == second
    assert browser.find_element("id", "revising")
    kb.press_and_wait("4", "4", "n")
    labels = Label.objects.filter(judgment_set__name="intents", docid=second)
    assert sorted(labels.values_list("intent_id", "revision", "grade", "current")) == [
        ("1", 1, -2, False), ("1", 2, 4, True), ("2", 1, 1, False), ("2", 2, 4, True)]
    assert kb.attr("progress-topic", "data-done") == "2"  # a revision judges nothing new
    cur = {(x.docid, x.intent_id): x.grade for x in Label.objects.filter(
        judgment_set__name="intents", current=True)}
    assert cur == {(first, "1"): 2, (first, "2"): 0, (second, "1"): 4, (second, "2"): 4}
    # topic mode: one row, the statement only; the grade key records and moves on
    browser.get(f"{live_server.url}/judging/tasks/topics/")
    assert len(browser.find_elements("css selector", ".grade-row")) == 1
    one = kb.docid()
    kb.press_and_wait("1")
    assert kb.attr("progress-topic", "data-done") == "1"
    two = kb.docid()
    # cannot judge by keyboard: x opens the reason, Enter sends it
    kb.press("x")
    kb.press_and_wait("blank page", "\ue007")
    assert kb.attr("progress-topic", "data-done") == "2"
    kb.press_and_wait("b")
    assert kb.docid() == two
    kb.press_and_wait("b")
    assert kb.docid() == one
    kb.press_and_wait("0")
    got = {x.docid: (x.grade, x.cannot_judge, x.revision) for x in Label.objects.filter(
        judgment_set__name="topics", current=True)}
    assert got == {one: (0, "", 2), two: (None, "blank page", 1)}
    seconds = Label.objects.filter(judgment_set__name="topics").values_list("seconds", flat=True)
    assert all(s is not None and 0 <= s < 120 for s in seconds)


@pytest.mark.parametrize("width", ["desktop", "phone"])
@pytest.mark.django_db(transaction=True)
def test_crowd_worker_from_prolific_link_to_code(width, live_server, browser, pages_index, tmp_path):
    pool = make_pool(tmp_path)
    task = services.judging_task_create(pool=pool, name="crowd", mode="topic", batch=2)
    use_pages(task, pages_index)
    qrels = tmp_path / "gold.qrels"
    qrels.write_text("1 0 t1d2 2\n2 0 t2d2 1\n1 0 t1d3 0\n")
    gold = services.judgments_import(qrels, format="adhoc", name="gold")
    services.judging_task_publish(task, completion_code="JUDGE-7", consent_text="Consent: yes.",
                                  judgments=3, gold_set=gold, gold_rate=0.5,
                                  gold_min_accuracy=0.5)
    task.refresh_from_db()
    url = (f"{live_server.url}/judging/w/{task.study.slug}/"
           "?PROLIFIC_PID=5f1e2d3c4b5a69788796a5b4&STUDY_ID=st1&SESSION_ID=se1")
    browser.set_window_size(*{"desktop": DESKTOP, "phone": PHONE}[width])
    try:
        _crowd(browser, url, task, f"crowd-judging-{width}")
    except Exception:
        shows_failure(browser)
        raise


def _crowd(browser, url, task, shots):
    from selenium.webdriver.common.by import By

    def shot(name):
        assert browser.execute_script(
            "return document.documentElement.scrollWidth <= window.innerWidth + 1"), name
        browser.save_screenshot(str(screenshot_dir() / f"{shots}-{name}.png"))

    kb = Keyboard(browser)
    browser.get(url)
    assert "Consent: yes." in browser.find_element(By.ID, "consent").text
    shot("consent")
    browser.find_element(By.ID, "id_agree").click()
    mark = "consent"
    browser.execute_script("window.__pageMark = arguments[0];", mark)
    browser.find_element(By.ID, "start").click()
    shown = False
    for _ in range(10):
        from selenium.webdriver.support.ui import WebDriverWait

        WebDriverWait(browser, 30).until(
            lambda d: d.find_elements(By.ID, "judgment") or d.find_elements(By.ID,
                                                                              "completion-code"))
        if browser.find_elements(By.ID, "completion-code"):
            break
        if not shown:
            shot("document")
            shown = True
        title = browser.find_element(By.ID, "doc-title").text  # "Page 2 on topic 1"
        words = title.split()
        docid = f"t{words[-1]}d{words[1]}"
        grade = {"t1d2": "2", "t2d2": "1", "t1d3": "0"}.get(docid, "1")
        kb.press_and_wait(grade)
    assert browser.find_element(By.ID, "completion-code").text == "JUDGE-7"
    shot("done")
    worker = "prolific:5f1e2d3c4b5a69788796a5b4"
    status = selectors.crowd_worker_status(task, worker)
    assert status["status"] == "completed" and status["judged"] == 3
    assert status["gold_seen"] >= 1 and GoldAnswer.objects.filter(passed=True).count() >= 1
    # the link again shows the code, not another document
    browser.get(url)
    assert browser.find_element(By.ID, "completion-code").text == "JUDGE-7"
