"""The organiser workflow in a real headless Chromium (upload topics, create a study, upload a
run, build a pool, create a judging task, export), and the worker pages at a phone's width.

Screenshots are kept in ``bench/out/screenshots/`` (git-ignored; ``SCREENSHOT_DIR``
overrides it) and their folder is printed.
"""
import os
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from crowd.models import Study, TopicSet
from pooling.models import Pool
from tests.crowd.study_helpers import make_study, make_topic_set
from tests.browser import BROWSER_MARKS, chromium

PHONE = (375, 812)
pytestmark = BROWSER_MARKS

TOPICS = "id\tstatement\ttitle\nT1\tFind facts about apples.\tapples\nT2\tFind facts about pears.\tpears\n"
RUN = "".join(f"{q} Q0 d{d} {r} {10 - r}.0 sys\n" for q in ("T1", "T2")
              for r, d in enumerate((1, 2, 3), start=1))


@pytest.fixture(scope="module")
def shots():
    root = Path(os.environ.get("SCREENSHOT_DIR") or Path(__file__).resolve().parents[1] / "bench/out/screenshots")
    root.mkdir(parents=True, exist_ok=True)
    yield root
    print(f"\nscreenshots kept in {root}")


@pytest.fixture
def browser():
    with chromium(extra_flags=["--hide-scrollbars"]) as driver:
        yield driver


def _shot(browser, shots, name):
    """A full-page PNG: the window grows to the page's height first."""
    width = browser.execute_script("return window.innerWidth")
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(browser.get_window_size()["width"], min(max(height + 140, 400), 4000))
    path = shots / f"{name}.png"
    browser.save_screenshot(str(path))
    assert path.stat().st_size > 1000
    return width


def _no_sideways_scroll(browser):
    return browser.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth + 1")


@pytest.mark.django_db(transaction=True)
def test_organiser_workflow(live_server, browser, shots, tmp_path):
    try:
        _organiser_workflow(live_server, browser, shots, tmp_path)
    except Exception:
        # shown by pytest on failure: where the browser was and what it showed
        print("URL:", browser.current_url)
        print(browser.find_element("tag name", "body").text[:3000])
        raise


def _click_and_wait(browser, element):
    """Click ``element`` and wait until another document has loaded in its place."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    browser.execute_script("window.__stale = true;")
    element.click()
    WebDriverWait(browser, 30, ignored_exceptions=(WebDriverException,)).until(
        lambda d: d.execute_script("return !window.__stale && document.readyState === 'complete'"))


def _organiser_workflow(live_server, browser, shots, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    def submit(form_id="organiser-form"):
        _click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, f"#{form_id} button[type=submit]"))

    def follow(text):
        _click_and_wait(browser, browser.find_element(By.LINK_TEXT, text))

    User.objects.create_user("org", password="pw-org-1", is_staff=True)
    browser.set_window_size(1280, 900)
    base = live_server.url
    browser.get(base + "/accounts/login/?next=/crowd/")
    browser.find_element(By.ID, "id_username").send_keys("org")
    browser.find_element(By.ID, "id_password").send_keys("pw-org-1")
    _click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]"))
    assert browser.find_element(By.ID, "sign-out")

    # upload topics: a bad file first (error with file and line, nothing stored), then a good one
    bad = tmp_path / "topics-bad.tsv"
    bad.write_text("id\tstatement\nT1\tok statement\nT1\t\n")
    good = tmp_path / "topics.tsv"
    good.write_text(TOPICS)
    follow("Upload topics")
    browser.find_element(By.ID, "id_file").send_keys(str(bad))
    Select(browser.find_element(By.ID, "id_format")).select_by_value("tsv")
    browser.find_element(By.ID, "id_new_topic_set").send_keys("apples")
    submit()
    assert "topics-bad.tsv, line 3" in browser.find_element(By.ID, "form-errors").text
    assert not TopicSet.objects.filter(name="apples").exists()
    _shot(browser, shots, "organiser-upload-error")
    browser.find_element(By.ID, "id_file").send_keys(str(good))
    submit()
    assert browser.find_element(By.ID, "project-stats")
    assert "2 topic(s) created" in browser.find_element(By.CSS_SELECTOR, "ul.messages").text
    project_url = browser.current_url

    # create a study and read its Prolific link
    follow("Create a study")
    assert Select(browser.find_element(By.ID, "id_topic_set")).first_selected_option.text == "apples"
    browser.find_element(By.ID, "id_name").send_keys("Apples study")
    browser.find_element(By.ID, "id_consent_text").send_keys("You agree to take part.")
    browser.find_element(By.ID, "id_completion_code").send_keys("DONE-42")
    submit()
    study = Study.objects.get(name="Apples study")
    prolific = browser.find_element(By.ID, "link-prolific").get_attribute("value")
    assert prolific.endswith(f"/crowd/s/{study.slug}/?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
                             "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}")

    # upload a run
    browser.get(project_url)
    follow("Upload a run")
    run_file = tmp_path / "sys.run"
    run_file.write_text(RUN)
    browser.find_element(By.ID, "id_file").send_keys(str(run_file))
    submit()
    assert "run " in browser.find_element(By.CSS_SELECTOR, "ul.messages").text

    # build a pool from the project page's form (selects); a worker's job is the service call
    browser.find_element(By.CSS_SELECTOR, "details summary").click()
    Select(browser.find_element(By.CSS_SELECTOR, "#pool-build select[name=sources]")).select_by_value("systems")
    depth = browser.find_element(By.CSS_SELECTOR, "#pool-build input[name=depth]")
    depth.clear()
    depth.send_keys("2")
    _click_and_wait(browser, browser.find_element(By.ID, "pool-build-submit"))
    pool = Pool.objects.get(topic_set__name="apples")
    from pooling.services import pool_build
    pool_build(pool.pk)

    # create a judging task over it, with invited assessors
    browser.get(project_url)
    follow("Create a judging task")
    Select(browser.find_element(By.ID, "id_pool")).select_by_value(str(pool.pk))
    browser.find_element(By.ID, "id_name").send_keys("apples-judging")
    Select(browser.find_element(By.ID, "id_mode")).select_by_value("topic")
    browser.find_element(By.ID, "id_assessors").send_keys("org\nalice")
    submit()
    assert "apples-judging" in browser.find_element(By.CSS_SELECTOR, "ul.messages").text

    # the project page shows it all, and the exports download what is stored
    browser.get(project_url)
    assert "apples-judging" in browser.find_element(By.ID, "project-judging").text
    _shot(browser, shots, "organiser-project")
    pool_txt = browser.execute_script(
        "return fetch(arguments[0]).then(r => r.text())",
        browser.find_element(By.LINK_TEXT, "txt").get_attribute("href"))
    assert [line.split()[:2] for line in pool_txt.splitlines()] == [
        ["T1", "d1"], ["T1", "d2"], ["T2", "d1"], ["T2", "d2"]]
    run_txt = browser.execute_script(
        "return fetch(arguments[0]).then(r => r.text())",
        browser.find_element(By.LINK_TEXT, "TREC run").get_attribute("href"))
    assert len(run_txt.splitlines()) == 6

    # sortable tables: clicking a header sorts its rows
    header = browser.find_element(By.CSS_SELECTOR, "#project-runs th button.sort")
    header.click()
    assert browser.find_element(By.CSS_SELECTOR, "#project-runs th").get_attribute("aria-sort") == "ascending"

    # the assessor's judging page at a phone's width
    browser.set_window_size(*PHONE)
    browser.get(base + "/judging/tasks/apples-judging/")
    assert _no_sideways_scroll(browser)
    _shot(browser, shots, "phone-judging")


@pytest.mark.django_db(transaction=True)
def test_worker_pages_on_a_phone(live_server, browser, shots):
    from selenium.webdriver.common.by import By

    browser.set_window_size(*PHONE)
    study = make_study(make_topic_set(3), responses_per_statement=2, statements_per_worker=2)
    browser.get(f"{live_server.url}/crowd/s/{study.slug}/"
                "?PROLIFIC_PID=5f1e2d3c4b5a69788796a5b4&STUDY_ID=st1&SESSION_ID=se1")
    assert browser.execute_script("return window.innerWidth") == PHONE[0]
    assert _no_sideways_scroll(browser)
    _shot(browser, shots, "phone-consent")
    browser.set_window_size(*PHONE)
    browser.find_element(By.ID, "id_agree").click()
    _click_and_wait(browser, browser.find_element(By.ID, "start"))
    box = browser.find_element(By.ID, "query")
    assert _no_sideways_scroll(browser)
    # the answer box and the submit button fill the phone's width, big enough to tap
    width = box.size["width"]
    assert width >= PHONE[0] * 0.8
    assert browser.find_element(By.ID, "submit").size["height"] >= 40
    _shot(browser, shots, "phone-item")
