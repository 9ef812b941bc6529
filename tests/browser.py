"""Headless Chromium through selenium for the page tests, or a skip that says what to install."""

import shutil

import pytest

_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--hide-scrollbars",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-extensions",
    "--disable-sync",
    "--force-device-scale-factor=1",
)


def chromium(width_px: int, height_px: int, *, browser_log: bool = False):
    """A Chrome driver on Debian's chromium with an explicit chromedriver (nothing is fetched)."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium not installed (pip install -e .[dev])")
    from selenium.webdriver.chrome.service import Service

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    chromedriver = shutil.which("chromedriver")
    if not browser or not chromedriver:
        pytest.skip(
            "chromium or chromedriver not on PATH: run scripts/install-chromium.sh (Debian's chromium and "
            "chromium-driver)"
        )
    opts = webdriver.ChromeOptions()
    opts.binary_location = browser
    for flag in (*_FLAGS, f"--window-size={width_px},{height_px}"):
        opts.add_argument(flag)
    if browser_log:
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    return webdriver.Chrome(service=Service(chromedriver), options=opts)
