"""How fast the judging page is to use, measured in a real headless Chromium: an assessor
judges ten documents in topic mode, one keystroke each, at a desktop and at a phone width.
The document and the grading panel are on screen without scrolling; screenshots of every
page are kept with the other browser tests' (``bench/out/screenshots/``, git-ignored;
``SCREENSHOT_DIR`` overrides it) as ``assessor-pace-<width>-NN.png``, and the keystrokes
and seconds per judgment in ``assessor-pace-<width>.json`` beside them (also printed,
``-s`` shows them)."""
from __future__ import annotations

import json
import statistics
import time

import pytest

from judging import services
from judging.models import Label

from .conftest import make_pool
from .page_fixtures import pages_index, use_pages  # noqa: F401 (fixture)
from .test_browser_judging import Keyboard, browser, shows_failure, sign_in  # noqa: F401
from tests.browser import BROWSER_MARKS, DESKTOP, PHONE, screenshot_dir

pytestmark = BROWSER_MARKS

WIDTHS = {"desktop": DESKTOP, "phone": PHONE}
JUDGMENTS = 10


def _in_view(browser, element_id) -> dict:
    """Where an element is, against the window: its top and bottom and whether its top
    edge is inside the window."""
    return browser.execute_script(
        "var r = document.getElementById(arguments[0]).getBoundingClientRect();"
        "return {top: r.top, bottom: r.bottom, height: window.innerHeight,"
        " visible: r.top >= 0 && r.top < window.innerHeight && r.height > 0};", element_id)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.django_db(transaction=True)
def test_ten_judgments_with_ten_keystrokes(width, live_server, browser, pages_index, tmp_path,
                                           django_user_model):
    pool = make_pool(tmp_path)
    task = use_pages(services.judging_task_create(
        pool=pool, name="pace", mode="topic", redundancy=1, batch=5, assessors=["alice"]),
        pages_index)
    sign_in(browser, live_server, django_user_model.objects.create_user("alice", password="x"))
    browser.set_window_size(*WIDTHS[width])
    shots = screenshot_dir()
    try:
        measured = _judge_ten(live_server, browser, shots, width)
    except Exception:
        shows_failure(browser)
        raise
    (shots / f"assessor-pace-{width}.json").write_text(json.dumps(measured, indent=2))
    print(json.dumps(measured))
    labels = Label.objects.filter(judgment_set=task.judgment_set, current=True)
    assert labels.count() == JUDGMENTS
    assert sorted(labels.values_list("grade", flat=True)) == sorted(
        int(k) for k in measured["keys"])
    assert measured["keystrokes"] == JUDGMENTS
    assert all(s is not None and 0 <= s < 60 for s in labels.values_list("seconds", flat=True))
    assert len(measured["screenshots"]) == JUDGMENTS + 1
    assert all((shots / name).stat().st_size > 1000 for name in measured["screenshots"])


def _judge_ten(live_server, browser, shots, width) -> dict:
    from selenium.webdriver.common.by import By

    kb = Keyboard(browser)
    browser.get(f"{live_server.url}/judging/tasks/pace/")
    # document first: its title and the grade keys are on screen without scrolling
    assert _in_view(browser, "doc-title")["visible"], _in_view(browser, "doc-title")
    assert _in_view(browser, "grades")["visible"], _in_view(browser, "grades")
    # the statement is shown once (the topic's title is "topic 1", its statement differs)
    assert browser.page_source.count("statement 1") == 1
    keys, seconds, seen, screenshots = [], [], [], []

    def shot(n):
        screenshots.append(f"assessor-pace-{width}-{n:02d}.png")
        browser.save_screenshot(str(shots / screenshots[-1]))

    for n in range(JUDGMENTS):
        shot(n)
        seen.append(kb.docid())
        key = "01"[n % 2]
        start = time.monotonic()
        kb.press_and_wait(key)
        seconds.append(time.monotonic() - start)
        keys.append(key)
        assert kb.docid() != seen[-1]
    shot(JUDGMENTS)
    assert len(set(seen)) == JUDGMENTS
    # the assessor's own pace: judged today and seconds per judgment
    pace = browser.find_element(By.ID, "pace")
    assert browser.find_element(By.ID, "pace-today").text == str(JUDGMENTS)
    return {"width": width, "judgments": JUDGMENTS, "keystrokes": len(keys), "keys": keys,
            "seconds_per_judgment": round(statistics.mean(seconds), 3),
            "seconds": [round(s, 3) for s in seconds], "pace_text": pace.text,
            "screenshots": screenshots}


@pytest.mark.django_db(transaction=True)
def test_intent_mode_moves_between_intents_with_arrows(live_server, browser, pages_index,
                                                       tmp_path, django_user_model):
    from selenium.webdriver.common.keys import Keys

    pool = make_pool(tmp_path)
    task = use_pages(services.judging_task_create(
        pool=pool, name="intents", mode="intent", redundancy=1, batch=3, assessors=["alice"]),
        pages_index)
    sign_in(browser, live_server, django_user_model.objects.create_user("alice", password="x"))
    kb = Keyboard(browser)
    try:
        browser.get(f"{live_server.url}/judging/tasks/intents/")
        first = kb.docid()
        # ↓ to intent 2 and grade it; ↑ back to intent 1 and grade it; Enter records
        kb.press(Keys.ARROW_DOWN, "1", Keys.ARROW_UP, "2")
        assert kb.docid() == first  # grading intents does not leave the page
        kb.press_and_wait(Keys.ENTER)
        assert kb.docid() != first
    except Exception:
        shows_failure(browser)
        raise
    got = dict(Label.objects.filter(judgment_set=task.judgment_set, docid=first)
               .values_list("intent_id", "grade"))
    assert got == {"1": 2, "2": 1}
