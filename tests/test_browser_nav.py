"""Every navigation link, clicked in a real headless Chromium as an organiser, as a signed-in
worker account and as an anonymous visitor: no page (nor anything it loads) answers 4xx/5xx.

Statuses come from Chromium's own network log, so a redirect to a missing page, a missing
stylesheet or a failing sub-request all count.
"""
import json

import pytest

from tests.crowd.study_helpers import make_study, make_topic_set
from tests.browser import BROWSER_MARKS, chromium

pytestmark = BROWSER_MARKS


@pytest.fixture
def browser():
    with chromium(capabilities={"goog:loggingPrefs": {"performance": "ALL"}}) as driver:
        yield driver


def _failed_responses(browser, base_url):
    """(status, url) of every response from the live server with status >= 400 since the
    last call (reading the performance log empties it)."""
    bad = []
    for entry in browser.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") != "Network.responseReceived":
            continue
        response = message["params"]["response"]
        if response["url"].startswith(base_url) and response["status"] >= 400:
            bad.append((response["status"], response["url"]))
    return bad


def _nav_links(browser):
    from selenium.webdriver.common.by import By

    return [(a.text, a.get_attribute("href")) for a in browser.find_elements(By.CSS_SELECTOR, "nav a")]


def _click_every_nav_link(browser, base_url):
    """From the home page, click each nav link in turn; returns the labels visited."""
    from selenium.webdriver.common.by import By

    browser.get(base_url + "/")
    links = _nav_links(browser)
    assert links, "the home page has no navigation"
    visited = []
    for label, href in links:
        browser.get(base_url + "/")
        _failed_responses(browser, base_url)  # only what the click loads counts below
        link = next(a for a in browser.find_elements(By.CSS_SELECTOR, "nav a")
                    if a.get_attribute("href") == href)
        link.click()
        assert browser.execute_script("return document.readyState") == "complete"
        bad = _failed_responses(browser, base_url)
        assert not bad, f"nav link {label!r} ({href}) led to {bad}"
        visited.append(label)
    return visited


def _sign_in(browser, base_url, username, password):
    from selenium.webdriver.common.by import By

    browser.get(base_url + "/")
    browser.find_element(By.ID, "sign-in").click()
    browser.find_element(By.ID, "id_username").send_keys(username)
    browser.find_element(By.ID, "id_password").send_keys(password)
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
    WebDriverWait(browser, 30).until(EC.presence_of_element_located((By.ID, "sign-out")))
    assert not _failed_responses(browser, base_url)
    assert browser.find_element(By.ID, "sign-out")  # signed in, back on a real page


def _sign_out(browser, base_url):
    from selenium.webdriver.common.by import By

    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(base_url + "/")
    browser.find_element(By.CSS_SELECTOR, "#sign-out button").click()
    # the sign-out form posts and the next page loads: wait for it, not for the old page
    WebDriverWait(browser, 30).until(EC.presence_of_element_located((By.ID, "sign-in")))
    assert not _failed_responses(browser, base_url)
    assert browser.find_element(By.ID, "sign-in")


@pytest.fixture
def content(db):
    """A topic set and a study, so the organiser's pages have something to list."""
    return make_study(make_topic_set(3))


@pytest.mark.django_db(transaction=True)
def test_every_nav_link_as_an_organiser(live_server, browser, content, django_user_model):
    django_user_model.objects.create_user("organiser", password="pw-organiser-1", is_staff=True,
                                          is_superuser=True)
    _sign_in(browser, live_server.url, "organiser", "pw-organiser-1")
    visited = _click_every_nav_link(browser, live_server.url)
    assert {"Home", "Crowd", "Retrieval", "Pooling", "Admin"} <= set(visited)
    _sign_out(browser, live_server.url)


@pytest.mark.django_db(transaction=True)
def test_every_nav_link_as_a_worker(live_server, browser, content, django_user_model):
    # anonymous, as a crowd worker arrives
    visited = _click_every_nav_link(browser, live_server.url)
    assert {"Home", "Crowd", "Retrieval", "Pooling", "Sign in"} <= set(visited)
    # a worker's own (non-staff) account
    django_user_model.objects.create_user("worker", password="pw-worker-1")
    _sign_in(browser, live_server.url, "worker", "pw-worker-1")
    visited = _click_every_nav_link(browser, live_server.url)
    assert "Admin" not in visited and {"Home", "Crowd"} <= set(visited)
    _sign_out(browser, live_server.url)
