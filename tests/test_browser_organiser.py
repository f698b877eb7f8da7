"""The organiser workflow in a real headless Chromium with a real Celery worker doing the
background work, and the crowd worker's pages at a desktop's and at a phone's width.

The workflow, from a new collection to its evaluation without a terminal: upload topics (a
bad file first), upload a collection that the worker indexes with Anserini, create a study
that two crowd workers answer through the worker pages (their queries become variants),
launch BM25 retrieval over those variants with the titles run as system runs too, build a
pool of the users' rankings and a combined pool that takes the title run as its system run,
create a judging task over the combined pool and judge it by keyboard on the assessor's
page (one key per judgment), download the run, the pools and the qrels through the page
links and check them against the database, then score the title run with the judgments on
the evaluation pages and check the scores against the ones worked out here. The
organiser's project, task and evaluation pages and the assessor's page are then shown at a
phone's width. Every wait for the worker is bounded.

Screenshots are kept in ``bench/out/screenshots/`` (git-ignored; ``SCREENSHOT_DIR``
overrides it) and their folder is printed.
"""
import time
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from crowd.models import Response, Study
from evaluation.models import Analysis
from judging.models import JudgingTask, Label
from pooling.models import Pool
from retrieval.models import Collection, Run
from retrieval.selectors import run_rankings
from tests.browser import BROWSER_MARKS, DESKTOP, PHONE, chromium, screenshot_dir
from tests.crowd.study_helpers import ATTENTION, make_study, make_topic_set
from topics.models import QueryVariant, TopicSet

pytestmark = BROWSER_MARKS

REDIS_DB = 9
WAIT = 120  # seconds the worker may take over one step before the test fails

TOPICS = "id\tstatement\ttitle\nT1\tFind facts about apples.\tapples\nT2\tFind facts about pears.\tpears\n"
FRUIT = {"T1": "apple", "T2": "pear"}
# TREC SGML: three documents per fruit and two about neither; docids say what they are about
DOCS = {
    "apple-1": ("Apple orchards", "Apple orchards grow apple trees in cool climates."),
    "apple-2": ("Apple pie", "A recipe for apple pie with apples, butter and cinnamon."),
    "apple-3": ("Apple varieties", "Granny Smith and Gala are apple varieties."),
    "pear-1": ("Pear trees", "Pear trees flower early; pear orchards need bees."),
    "pear-2": ("Pear varieties", "Conference and Williams are pear varieties."),
    "pear-3": ("Poached pears", "Pears poached in red wine make a dessert."),
    "other-1": ("Bicycle repair", "Fixing a flat tyre on a bicycle."),
    "other-2": ("Weather", "Rain is expected in the north tomorrow."),
}
COLLECTION = "".join(f"<DOC>\n<DOCNO>{d}</DOCNO>\n<TITLE>{t}</TITLE>\n<TEXT>\n{x}\n</TEXT>\n</DOC>\n"
                     for d, (t, x) in DOCS.items())
# what each crowd worker (a Prolific id) types for the statement about each fruit
ANSWERS = {"5f1e2d3c4b5a69788796a501": {"apple": "apple orchards", "pear": "pear varieties"},
           "5f1e2d3c4b5a69788796a502": {"apple": "apple pie", "pear": "pear trees"}}


@pytest.fixture(scope="module")
def shots():
    root = screenshot_dir()
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


def _fetch(browser, href):
    """The text a link downloads, fetched by the page (with its session cookie)."""
    return browser.execute_script(
        "return fetch(arguments[0]).then(r => r.ok ? r.text() : 'HTTP ' + r.status)", href)


def _text(browser, css):
    from selenium.common.exceptions import NoSuchElementException

    try:
        return browser.find_element("css selector", css).text
    except NoSuchElementException:
        return ""


@pytest.fixture
def worker(celery_on_redis, settings, tmp_path):
    """A real Celery worker on Redis (it skips, saying why, without PostgreSQL or Redis).
    The pages (this process) and the worker read and write the same DATA_DIR and indexes."""
    broker = celery_on_redis(REDIS_DB, "browser-test")
    data = tmp_path / "data"
    settings.DATA_DIR = data
    settings.INDEX_ROOT = data / "indexes"
    return broker.worker(pool="prefork", concurrency=1, data_dir=data)


@pytest.mark.integration
@pytest.mark.slow
def test_organiser_workflow(worker, live_server, browser, shots, tmp_path):
    """From a topics file to exported qrels through the pages, the worker doing the
    indexing, retrieval and pooling."""
    t0 = time.monotonic()
    try:
        _organiser_workflow(live_server, browser, shots, tmp_path, worker)
    except (Exception, pytest.fail.Exception):
        # shown by pytest on failure: where the browser was, what it showed, the worker's log
        print("URL:", browser.current_url)
        print(browser.find_element("tag name", "body").text[:3000])
        print("worker log:\n" + worker.tail())
        raise
    print(f"\norganiser workflow took {time.monotonic() - t0:.1f} s")


def _next_page(browser, act):
    """Do ``act()`` and wait until another document has loaded in place of this one."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    browser.execute_script("window.__stale = true;")
    act()
    WebDriverWait(browser, 30, ignored_exceptions=(WebDriverException,)).until(
        lambda d: d.execute_script("return !window.__stale && document.readyState === 'complete'"))


def _click_and_wait(browser, element):
    _next_page(browser, element.click)


def _keys_and_wait(browser, keys):
    """Type ``keys`` to the page (not to a field) and wait for the next document."""
    from selenium.webdriver.common.action_chains import ActionChains

    _next_page(browser, ActionChains(browser).send_keys(keys).perform)


def _organiser_workflow(live_server, browser, shots, tmp_path, worker):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    def submit(form_id="organiser-form"):
        _click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, f"#{form_id} button[type=submit]"))

    def follow(text):
        _click_and_wait(browser, browser.find_element(By.LINK_TEXT, text))

    def wait_until(what, check, reload=None):
        """Poll ``check()`` (reloading ``reload`` first) until it is true, for at most WAIT s."""
        deadline = time.monotonic() + WAIT
        while True:
            if reload:
                browser.get(reload)
            value = check()
            if value:
                return value
            if not worker.alive:
                pytest.fail(f"worker exited while waiting for {what}:\n{worker.tail()}")
            if time.monotonic() > deadline:
                pytest.fail(f"{what}: not done after {WAIT} s")
            time.sleep(0.5)

    def cell(table, column):
        """The text of ``column`` (0-based) in the first data row of a project table."""
        return browser.find_elements(By.CSS_SELECTOR, f"#{table} tr")[1].find_elements(
            By.TAG_NAME, "td")[column].text.strip()

    def row(table, first):
        """The row of a project table whose first cell's first word is ``first`` (a run's
        id, a pool's name), or None."""
        for tr in browser.find_elements(By.CSS_SELECTOR, f"#{table} tr")[1:]:
            words = tr.find_element(By.TAG_NAME, "td").text.split()
            if words and words[0] == str(first):
                return tr
        return None

    def texts(tr):
        return [td.text.strip() for td in tr.find_elements(By.TAG_NAME, "td")] if tr else []

    # 1. sign in as the organiser
    User.objects.create_user("org", password="pw-org-1", is_staff=True)
    browser.set_window_size(*DESKTOP)
    base = live_server.url
    browser.get(base + "/accounts/login/?next=/crowd/")
    browser.find_element(By.ID, "id_username").send_keys("org")
    browser.find_element(By.ID, "id_password").send_keys("pw-org-1")
    _click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]"))
    assert browser.find_element(By.ID, "sign-out")

    # 2. upload topics: a bad file first (error with file and line, nothing stored), then a good one
    bad = tmp_path / "topics-bad.tsv"
    bad.write_text("id\tstatement\nT1\tok statement\nT1\t\n")
    good = tmp_path / "topics.tsv"
    good.write_text(TOPICS)
    follow("Upload topics")
    browser.find_element(By.ID, "id_file").send_keys(str(bad))
    Select(browser.find_element(By.ID, "id_format")).select_by_value("tsv")
    browser.find_element(By.ID, "id_new_topic_set").send_keys("fruit")
    submit()
    assert "topics-bad.tsv, line 3" in browser.find_element(By.ID, "form-errors").text
    assert not TopicSet.objects.filter(name="fruit").exists()
    _shot(browser, shots, "organiser-01-topics-error")
    browser.find_element(By.ID, "id_file").send_keys(str(good))
    submit()
    assert "2 topic(s) created" in browser.find_element(By.CSS_SELECTOR, "ul.messages").text
    project_url = browser.current_url
    assert project_url.endswith(f"/topic-sets/{TopicSet.objects.get(name='fruit').pk}/project/")

    # 3. upload a collection from the project page; the worker indexes it with Anserini
    docs = tmp_path / "fruit.trec"
    docs.write_text(COLLECTION)
    follow("Upload a collection")
    browser.find_element(By.ID, "id_file").send_keys(str(docs))
    browser.find_element(By.ID, "id_name").send_keys("fruit-docs")
    Select(browser.find_element(By.ID, "id_format")).select_by_value("trec")
    _shot(browser, shots, "organiser-02-collection-form")
    submit()
    assert "/organiser/uploads/" in browser.current_url
    _shot(browser, shots, "organiser-03-collection-queued")
    # the status page reloads itself every two seconds until the import has finished
    state = wait_until("indexing the collection", lambda: browser.execute_script(
        "var s = document.getElementById('upload-state');"
        "return s && ['done', 'failed'].includes(s.dataset.status) ? s.dataset.status : null;"))
    assert state == "done", _text(browser, "#form-errors")
    assert _text(browser, "#upload-result") == "collection 'fruit-docs': 8 documents indexed"
    collection = Collection.objects.get(name="fruit-docs")
    assert (collection.status, collection.doc_count) == ("ready", 8)
    assert Path(collection.index_path).is_dir()
    _shot(browser, shots, "organiser-04-collection-indexed")

    # 4. create a study; two crowd workers answer it through the worker pages (Prolific link)
    browser.get(project_url)
    follow("Create a study")
    assert Select(browser.find_element(By.ID, "id_topic_set")).first_selected_option.text == "fruit"
    browser.find_element(By.ID, "id_name").send_keys("Fruit study")
    browser.find_element(By.ID, "id_consent_text").send_keys("You agree to take part.")
    browser.find_element(By.ID, "id_completion_code").send_keys("DONE-42")
    for field, value in (("id_responses_per_statement", "2"), ("id_statements_per_worker", "2")):
        browser.find_element(By.ID, field).clear()
        browser.find_element(By.ID, field).send_keys(value)
    submit()
    study = Study.objects.get(name="Fruit study")
    prolific = browser.find_element(By.ID, "link-prolific").get_attribute("value")
    assert prolific.endswith(f"/crowd/s/{study.slug}/?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
                             "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}")
    _shot(browser, shots, "organiser-05-study-links")
    for n, (pid, answers) in enumerate(ANSWERS.items(), start=1):
        # Prolific fills the placeholders; the second worker uses the same browser and
        # takes the place of the first through the switch page
        browser.get(prolific.replace("{{%PROLIFIC_PID%}}", pid).replace(
            "{{%STUDY_ID%}}", "prolific-study").replace("{{%SESSION_ID%}}", f"session-{n}"))
        if n > 1:
            assert pid in browser.find_element(By.ID, "switch-message").text
            _shot(browser, shots, "worker-switch")
            _click_and_wait(browser, browser.find_element(By.ID, "switch"))
        assert "You agree to take part." in browser.find_element(By.ID, "consent").text
        if n == 1:
            _shot(browser, shots, "worker-consent")
        browser.find_element(By.ID, "id_agree").click()
        _click_and_wait(browser, browser.find_element(By.ID, "start"))
        for item in range(2):
            statement = browser.find_element(By.ID, "statement").text
            fruit = "apple" if "apples" in statement else "pear"
            browser.find_element(By.ID, "query").send_keys(answers[fruit])
            if n == 1 and item == 0:
                _shot(browser, shots, "worker-item")
            _click_and_wait(browser, browser.find_element(By.ID, "submit"))
        assert browser.find_element(By.ID, "completion-code").text == "DONE-42"
        if n == 1:
            _shot(browser, shots, "worker-done")
    variants = sorted(QueryVariant.objects.filter(topic__topic_set__name="fruit")
                      .values_list("topic__topic_id", "normalised", "worker_id"))
    assert variants == sorted((tid, a[FRUIT[tid]], pid) for pid, a in ANSWERS.items()
                              for tid in FRUIT)
    browser.get(project_url)
    stats = browser.find_element(By.ID, "project-stats")
    assert dict(zip((e.text for e in stats.find_elements(By.TAG_NAME, "dt")),
                    (e.text for e in stats.find_elements(By.TAG_NAME, "dd")))) == {
        "Topics": "2", "Statements": "2", "Answers (with repeats)": "4",
        "Unique variants": "4", "Workers": "2"}

    # 5. launch BM25 retrieval over the variants, and over the titles as system runs (the
    # topics have no descriptions, so no description run); the worker runs them
    follow("Launch retrieval")
    assert Select(browser.find_element(By.ID, "id_topic_set")).first_selected_option.text == "fruit"
    Select(browser.find_element(By.ID, "id_collection")).select_by_visible_text("fruit-docs")
    Select(browser.find_element(By.ID, "id_model")).select_by_visible_text("bm25")
    Select(browser.find_element(By.ID, "id_source")).select_by_value("variants")
    depth = browser.find_element(By.ID, "id_depth")
    depth.clear()
    depth.send_keys("5")
    browser.find_element(By.ID, "id_system_runs").click()
    _shot(browser, shots, "organiser-06-retrieval-form")
    submit()
    run = Run.objects.get(topic_set__name="fruit", source="variants")
    titles = Run.objects.get(topic_set__name="fruit", source="titles")
    assert Run.objects.filter(topic_set__name="fruit").count() == 2
    assert browser.current_url.endswith(f"/{run.pk}/"), browser.current_url
    assert f"run {titles.pk} over titles" in browser.find_element(By.CSS_SELECTOR, "ul.messages").text

    def runs_finished():
        states = [(texts(row("project-runs", r.pk)) or [""] * 6)[5] for r in (run, titles)]
        return all(s in ("done", "failed") for s in states) and states
    status = wait_until("the BM25 runs", runs_finished, reload=project_url)
    run.refresh_from_db()
    titles.refresh_from_db()
    assert status == ["done", "done"], (run.error, titles.error)
    assert texts(row("project-runs", run.pk))[6] == "4 / 4"
    assert texts(row("project-runs", titles.pk))[2:7] == ["titles", "fruit-docs", "bm25", "done", "2 / 2"]
    _shot(browser, shots, "organiser-07-runs-done")

    # 6. build a pool of the users' rankings from the project page's form; the worker builds it
    browser.find_element(By.CSS_SELECTOR, "#pool-build").find_element(
        By.XPATH, "./ancestor::details/summary").click()
    form = browser.find_element(By.ID, "pool-build")
    Select(form.find_element(By.NAME, "sources")).select_by_value("users")
    Select(form.find_element(By.NAME, "collection")).select_by_visible_text("fruit-docs")
    Select(form.find_element(By.NAME, "model")).select_by_visible_text("bm25")
    form.find_element(By.NAME, "depth").clear()
    form.find_element(By.NAME, "depth").send_keys("2")
    form.find_element(By.NAME, "name").send_keys("fruit-pool")
    _shot(browser, shots, "organiser-08-pool-form")
    _click_and_wait(browser, browser.find_element(By.ID, "pool-build-submit"))
    pool = Pool.objects.get(name="fruit-pool")
    status = wait_until("the pool", lambda: cell("project-pools", 3) in ("done", "failed")
                        and cell("project-pools", 3), reload=project_url)
    pool.refresh_from_db()
    assert status == "done", pool.error
    _shot(browser, shots, "organiser-09-pool-done")

    # 6b. a combined pool: the users' rankings and the title run, chosen on the same form as
    # the pool's system run (kept as a system run of its own)
    browser.find_element(By.CSS_SELECTOR, "#pool-build").find_element(
        By.XPATH, "./ancestor::details/summary").click()
    form = browser.find_element(By.ID, "pool-build")
    Select(form.find_element(By.NAME, "sources")).select_by_value("combined")
    Select(form.find_element(By.NAME, "collection")).select_by_visible_text("fruit-docs")
    Select(form.find_element(By.NAME, "model")).select_by_visible_text("bm25")
    form.find_element(By.NAME, "depth").clear()
    form.find_element(By.NAME, "depth").send_keys("2")
    form.find_element(By.NAME, "name").send_keys("fruit-combined")
    choices = form.find_elements(By.CSS_SELECTOR, "input[name=system_runs]")
    assert [c.get_attribute("value") for c in choices] == [str(titles.pk)]  # the variants run is no system run
    assert "bm25 over titles of fruit-docs" in choices[0].find_element(By.XPATH, "./ancestor::label").text
    choices[0].click()
    _shot(browser, shots, "organiser-10-combined-pool-form")
    _click_and_wait(browser, browser.find_element(By.ID, "pool-build-submit"))
    combined = Pool.objects.get(name="fruit-combined")
    status = wait_until("the combined pool", lambda: cell("project-pools", 3) in ("done", "failed")
                        and cell("project-pools", 3), reload=project_url)
    combined.refresh_from_db()
    assert status == "done", combined.error
    system = Run.objects.get(topic_set__name="fruit", kind=Run.KIND_SYSTEM)
    assert system.tag == f"bm25-titles-run{titles.pk}"
    assert texts(row("project-pools", "fruit-combined"))[1:4] == ["combined", "depth", "done"]
    _shot(browser, shots, "organiser-11-combined-pool-done")

    # 7. a judging task over the combined pool, judged by the organiser on the assessor's page
    follow("Create a judging task")
    Select(browser.find_element(By.ID, "id_pool")).select_by_value(str(combined.pk))
    browser.find_element(By.ID, "id_name").send_keys("fruit-judging")
    Select(browser.find_element(By.ID, "id_mode")).select_by_value("topic")
    browser.find_element(By.ID, "id_assessors").send_keys("org")
    submit()
    assert "fruit-judging" in browser.find_element(By.CSS_SELECTOR, "ul.messages").text
    _shot(browser, shots, "organiser-12-judging-task")
    task = JudgingTask.objects.get(name="fruit-judging")
    # the task's page has no link to judge it: the Judging menu lists the tasks one may judge
    follow("Judging")
    _click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, "a.judge-link"))
    assert browser.current_url == base + "/judging/tasks/fruit-judging/"
    pressed = {}
    for n in range(2):
        heading = browser.find_element(By.TAG_NAME, "h1").text
        topic_id = heading.rsplit("topic ", 1)[1].strip()
        docid = browser.find_element(By.CSS_SELECTOR, "#document p.muted").text.removeprefix("Document ").strip()
        assert browser.find_element(By.ID, "doc-title").text == DOCS[docid][0]
        assert (topic_id, docid) not in pressed
        # keyboard: a grade's key records it and shows the next document (topic mode);
        # relevant when the document is about the fruit
        grade = 2 if docid.startswith(FRUIT[topic_id]) else 0
        if n == 0:
            _shot(browser, shots, "assessor-judging")
        _keys_and_wait(browser, f"{grade}")
        pressed[(topic_id, docid)] = grade
    labels = {(lab.topic_id, lab.docid): lab.grade for lab in Label.objects.filter(
        judgment_set=task.judgment_set, current=True, withdrawn=False)}
    assert labels == pressed
    assert set(Label.objects.filter(judgment_set=task.judgment_set)
               .values_list("assessor", flat=True)) == {"org"}

    # 8. the project page shows it all; the exports download what is stored
    browser.get(project_url)
    assert cell("project-judging", 4).startswith("2 / ")
    _shot(browser, shots, "organiser-13-project")
    run_txt = _fetch(browser, row("project-runs", run.pk).find_element(
        By.LINK_TEXT, "TREC run").get_attribute("href"))
    ranked: dict[str, list[str]] = {}
    for line in run_txt.splitlines():
        qid, q0, docid, rank, score, tag = line.split()
        assert int(rank) == len(ranked.setdefault(qid, [])) + 1
        ranked[qid].append(docid)
    assert ranked == {qid: docids for qid, docids, _ in run_rankings(run)}
    assert len(ranked) == 4
    for qid, docids in ranked.items():
        # BM25 puts a document about the query's fruit first, and nothing about neither
        assert docids[0].startswith(FRUIT[qid.split(":")[0]]), (qid, docids)
        assert not any(d.startswith("other") for d in docids), (qid, docids)
    pool_txt = _fetch(browser, row("project-pools", "fruit-pool").find_element(
        By.LINK_TEXT, "txt").get_attribute("href"))
    expected_pool = {(qid.split(":")[0], d) for qid, docids in ranked.items() for d in docids[:2]}
    assert {tuple(line.split()[:2]) for line in pool_txt.splitlines()} == expected_pool
    assert len(pool_txt.splitlines()) == len(expected_pool)
    # the combined pool adds the title run's top two to the users' top two
    title_ranked = {qid.split(":")[0]: docids for qid, docids, _ in run_rankings(system)}
    assert sorted(title_ranked) == ["T1", "T2"]
    expected_combined = expected_pool | {(t, d) for t, docids in title_ranked.items() for d in docids[:2]}
    combined_txt = _fetch(browser, row("project-pools", "fruit-combined").find_element(
        By.LINK_TEXT, "txt").get_attribute("href"))
    assert {tuple(line.split()[:2]) for line in combined_txt.splitlines()} == expected_combined
    qrels_txt = _fetch(browser, browser.find_element(By.LINK_TEXT, "qrels").get_attribute("href"))
    assert {(t, d): int(g) for t, _, d, g in map(str.split, qrels_txt.splitlines())} == labels

    # sortable tables: clicking a header sorts its rows
    browser.find_element(By.CSS_SELECTOR, "#project-runs th button.sort").click()
    assert browser.find_element(By.CSS_SELECTOR, "#project-runs th").get_attribute("aria-sort") == "ascending"

    # the assessor's judging page at a phone's width
    browser.set_window_size(*PHONE)
    browser.get(base + "/judging/tasks/fruit-judging/")
    assert _no_sideways_scroll(browser)
    _shot(browser, shots, "phone-judging")

    # 9. the rest of the combined pool judged by keyboard at a desktop: one key each
    browser.set_window_size(*DESKTOP)
    browser.get(base + "/judging/tasks/fruit-judging/")
    keystrokes = 0
    while not browser.find_elements(By.ID, "finished"):
        assert keystrokes < len(expected_combined), "the judging page keeps showing documents"
        topic_id = browser.find_element(By.TAG_NAME, "h1").text.rsplit("topic ", 1)[1].strip()
        docid = browser.find_element(By.CSS_SELECTOR, "#document p.muted").text.removeprefix("Document ").strip()
        assert (topic_id, docid) not in pressed
        pressed[(topic_id, docid)] = 2 if docid.startswith(FRUIT[topic_id]) else 0
        _keys_and_wait(browser, str(pressed[(topic_id, docid)]))
        keystrokes += 1
    _shot(browser, shots, "assessor-finished")
    labels = {(lab.topic_id, lab.docid): lab.grade for lab in Label.objects.filter(
        judgment_set=task.judgment_set, current=True, withdrawn=False)}
    assert labels == pressed and set(labels) == expected_combined
    assert keystrokes == len(labels) - 2  # one key per judgment
    seconds = list(Label.objects.filter(judgment_set=task.judgment_set).values_list("seconds", flat=True))
    assert all(x is not None and 0 <= x < WAIT for x in seconds)
    print(f"\njudged the combined pool: {len(labels)} judgments, {keystrokes + 2} keystrokes, "
          f"{sum(seconds) / len(seconds):.2f} s per judgment on the page")

    # 10. score the title run with the judgments on the evaluation pages; the worker scores it
    browser.get(project_url)
    follow("Evaluate runs")
    assert Select(browser.find_element(By.ID, "id_topic_set")).first_selected_option.text == "fruit"
    Select(browser.find_element(By.ID, "id_runs")).select_by_value(f"fruit/{system.tag}")
    Select(browser.find_element(By.ID, "id_source")).select_by_value("judgments:fruit-judging")
    browser.find_element(By.ID, "id_measures").clear()
    browser.find_element(By.ID, "id_measures").send_keys("P@2 P@5 AP")
    _shot(browser, shots, "organiser-14-evaluation-form")
    submit("analysis-form")
    evaluation_url = browser.current_url
    analysis = Analysis.objects.get(params__topic_set="fruit")
    assert evaluation_url.endswith(f"/evaluation/analyses/{analysis.pk}/"), evaluation_url
    state = wait_until("the evaluation", lambda: _text(browser, "#state").split(" ")[0] in ("Done", "Failed")
                       and _text(browser, "#state"), reload=evaluation_url)
    assert state.startswith("Done"), state
    header = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#table-0 th")]
    scores = dict(zip(header, texts(browser.find_element(By.CSS_SELECTOR, "#table-0 tbody tr"))))
    # worked out here from the title run's rankings and the labels (trec_eval: grade > 0
    # is relevant, AP divides by the topic's relevant documents in the qrels)
    relevant = {pair for pair, grade in labels.items() if grade > 0}
    p2, p5, ap = [], [], []
    for t, docids in title_ranked.items():
        hits = [(t, d) in relevant for d in docids]
        p2.append(sum(hits[:2]) / 2)
        p5.append(sum(hits[:5]) / 5)
        ap.append(sum(sum(hits[:i + 1]) / (i + 1) for i, h in enumerate(hits) if h)
                  / sum(1 for tt, _ in relevant if tt == t))
    assert scores["run"] == system.tag
    assert float(scores["P@2"]) == pytest.approx(sum(p2) / 2, abs=1e-4)
    assert float(scores["P@5"]) == pytest.approx(sum(p5) / 2, abs=1e-4)
    assert float(scores["AP"]) == pytest.approx(sum(ap) / 2, abs=1e-4)
    assert float(scores["P@2"]) == 1.0  # the titles name the fruit: both top documents are about it
    _shot(browser, shots, "organiser-15-evaluation")
    browser.get(project_url)
    assert texts(row("project-evaluations", analysis.pk))[1:3] == ["evaluate", "done"]

    # 11. the organiser's main pages at a phone's width: no sideways scrolling
    browser.set_window_size(*PHONE)
    for name, url in (("phone-project", project_url),
                      ("phone-task", base + reverse("judging:manage_task", args=["fruit-judging"])),
                      ("phone-evaluation", evaluation_url)):
        browser.get(url)
        assert _no_sideways_scroll(browser), name
        _shot(browser, shots, name)
        browser.set_window_size(*PHONE)

@pytest.mark.parametrize("width", ["desktop", "phone"])
@pytest.mark.django_db(transaction=True)
def test_worker_pages_at_each_width(width, live_server, browser, shots):
    """A crowd worker from the study link to the completion code, at a desktop's and at a
    phone's width, without sideways scrolling; a screenshot of each page kind."""
    from selenium.webdriver.common.by import By

    size = {"desktop": DESKTOP, "phone": PHONE}[width]
    browser.set_window_size(*size)
    study = make_study(make_topic_set(3), responses_per_statement=2, statements_per_worker=2)
    browser.get(f"{live_server.url}/crowd/s/{study.slug}/"
                "?PROLIFIC_PID=5f1e2d3c4b5a69788796a5b4&STUDY_ID=st1&SESSION_ID=se1")
    assert browser.execute_script("return window.innerWidth") == size[0]
    assert _no_sideways_scroll(browser)
    _shot(browser, shots, f"crowd-{width}-consent")
    browser.set_window_size(*size)
    browser.find_element(By.ID, "id_agree").click()
    _click_and_wait(browser, browser.find_element(By.ID, "start"))
    box = browser.find_element(By.ID, "query")
    assert _no_sideways_scroll(browser)
    if width == "phone":
        # the answer box and the submit button fill the phone's width, big enough to tap
        assert box.size["width"] >= PHONE[0] * 0.8
        assert browser.find_element(By.ID, "submit").size["height"] >= 40
    _shot(browser, shots, f"crowd-{width}-item")
    browser.set_window_size(*size)
    answered = 0
    while not browser.find_elements(By.ID, "completion-code"):
        assert answered < 3, "two statements and one attention check, then the code"
        statement = browser.find_element(By.ID, "statement").text
        browser.find_element(By.ID, "query").send_keys(
            ATTENTION[1] if ATTENTION[0] in statement else f"query {answered}")
        _click_and_wait(browser, browser.find_element(By.ID, "submit"))
        answered += 1
    assert answered == 3
    assert browser.find_element(By.ID, "completion-code").text == "C0DE-1234"
    assert _no_sideways_scroll(browser)
    _shot(browser, shots, f"crowd-{width}-done")
    assert Response.objects.filter(assignment__participant__study=study).count() == 3
