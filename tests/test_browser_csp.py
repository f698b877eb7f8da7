"""The pages work under their Content-Security-Policy in a real headless Chromium: the
browser reports no blocked script, style or form, the judging keys (a static script) still
grade and submit, and the API's documentation renders."""
import pytest

from tests.browser import BROWSER_MARKS, chromium
from tests.judging.conftest import make_pool

pytestmark = [*BROWSER_MARKS, pytest.mark.django_db(transaction=True)]


def _violations(driver):
    """Console messages about the policy since the last call (reading empties the log)."""
    return [e["message"] for e in driver.get_log("browser")
            if "Content Security Policy" in e["message"] or "Refused to" in e["message"]]


def test_pages_work_under_the_policy(live_server, tmp_path, django_user_model):
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    from judging import selectors, services

    pool = make_pool(tmp_path, docs=3, intents=())
    services.judging_task_create(pool=pool, name="t", mode="topic", assessors=["organiser"],
                                 scale="binary")
    django_user_model.objects.create_user("organiser", password="pw-0123456789",
                                          is_staff=True, is_superuser=True)
    base = live_server.url
    with chromium(capabilities={"goog:loggingPrefs": {"browser": "ALL"}}) as driver:
        wait = WebDriverWait(driver, 30)
        driver.get(f"{base}/accounts/login/")
        driver.find_element(By.ID, "id_username").send_keys("organiser")
        driver.find_element(By.ID, "id_password").send_keys("pw-0123456789")
        driver.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
        wait.until(EC.presence_of_element_located((By.ID, "sign-out")))

        # the judging page: a grade key posts the judgment (ui/judge.js, topic mode)
        driver.get(f"{base}/judging/tasks/t/")
        first = wait.until(EC.presence_of_element_located((By.ID, "doc-body")))
        key = driver.execute_script(
            "return document.querySelector('.grade-row input[type=radio]').dataset.key")
        body = driver.find_element(By.TAG_NAME, "body")
        body.send_keys(key)
        # while the next page loads, chromedriver may answer for the old node with an
        # "inspector error" instead of "stale element": both mean it is gone
        WebDriverWait(driver, 30, ignored_exceptions=(WebDriverException,)).until(
            EC.staleness_of(first))
        assert selectors.assessor_progress(pool.judging_tasks.get(), "organiser")["done"] == 1

        for path in ("/", f"/pooling/pools/{pool.name}/", "/judging/manage/t/", "/admin/",
                     "/crowd/organiser/topics/"):
            driver.get(base + path)
            assert driver.execute_script("return document.readyState") == "complete"
        driver.get(f"{base}/api/docs/")  # Swagger UI, its scripts from static files
        wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, ".swagger-ui .info")))
        assert not _violations(driver)
