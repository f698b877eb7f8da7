"""Headless Chromium for the browser tests: Debian's chromium and chromedriver, a fresh
profile each time, no background network traffic. Tests skip with the reason when the
packages are absent (.ci/run installs them).

The widths every role's pages are tried at (``DESKTOP``, ``PHONE``) and the folder their
screenshots are kept in (:func:`screenshot_dir`) are shared here."""
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
DESKTOP = (1280, 900)
PHONE = (375, 812)

BROWSER_MARKS = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()),
        reason="chromium and chromedriver are not installed (apt-get install chromium chromium-driver)",
    ),
]


def screenshot_dir() -> Path:
    """Where screenshots are kept: ``bench/out/screenshots/`` (git-ignored), or the
    folder ``SCREENSHOT_DIR`` names; made if missing."""
    root = Path(os.environ.get("SCREENSHOT_DIR")
                or Path(__file__).resolve().parents[1] / "bench/out/screenshots")
    root.mkdir(parents=True, exist_ok=True)
    return root


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
