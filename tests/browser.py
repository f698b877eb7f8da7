"""Headless Chromium for the browser tests: Debian's chromium and chromedriver, a fresh
profile each time, no background network traffic. Tests skip with the reason when the
packages are absent (.ci/run installs them)."""
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

BROWSER_MARKS = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()),
        reason="chromium and chromedriver are not installed (apt-get install chromium chromium-driver)",
    ),
]


@contextmanager
def chromium(extra_flags=(), capabilities=None):
    """A Selenium driver for a headless Chromium, quit (and its profile removed) on exit."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-dev-shm-usage", *extra_flags, f"--user-data-dir={profile}"]:
        opts.add_argument(flag)
    for name, value in (capabilities or {}).items():
        opts.set_capability(name, value)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
