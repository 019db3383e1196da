"""Headless Chromium for the browser tests (tests/test_browser.py) and scripts/screenshots.py.

Debian's /usr/bin/chromium, driven through Debian's /usr/bin/chromedriver by Selenium. The driver's path is
given explicitly, so Selenium Manager (which would download a driver and a browser) never runs; a guard
makes any call to it an error. The flags are those this closed network needs: without the background
networking ones Chromium keeps trying to reach Google's hosts. Every wait is bounded: Chromium's start by
chromedriver, each driver command (session creation included) by `COMMAND_SECONDS`, a page load by
`PAGE_SECONDS`; a browser that does not start is a `BrowserError` naming what to do, never a hang.

What a page did wrong is collected two ways: the browser log (console errors, uncaught exceptions and CSP
violations, which Chromium logs with source "security"), and a `securitypolicyviolation` listener that the
DevTools protocol installs before any of the page's own scripts (DevTools scripts are exempt from the
page's CSP), so a violation is seen even when the console message would be worded differently.
"""

from __future__ import annotations

import base64
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.common.selenium_manager import SeleniumManager
    from selenium.webdriver.support.ui import Select
except ImportError as missing:  # a virtualenv made before Selenium joined the test extras
    raise ImportError(
        f"{missing}: run scripts/install --test (it installs Selenium, chromium, chromium-driver)"
    ) from None

__all__ = ["Browser", "BrowserError", "By", "Keys", "Problem", "Select", "browser"]

CHROMIUM = Path(os.environ.get("CANCELWIRE_CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("CANCELWIRE_CHROMEDRIVER", "/usr/bin/chromedriver"))
INSTALL_HINT = "run scripts/install --test as root, or: sudo apt-get install -y chromium chromium-driver"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
)
#: The first screen a person sees on a laptop.
VIEWPORT = (1280, 800)
#: Generous: the machine running the suite may be loaded (2 cores shared with other work).
COMMAND_SECONDS = 120
PAGE_SECONDS = 60

_LISTENER = """
window.__cancelwireViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cancelwireViolations.push(e.violatedDirective + " blocked " + (e.blockedURI || "inline"));
});
"""


MAX_SHOT_HEIGHT = 16_384
"""The tallest screenshot taken: Chromium refuses a taller one ("Page is too large", its largest texture)."""


class BrowserError(RuntimeError):
    """Chromium or chromedriver is missing or did not start."""


def _no_selenium_manager(*_args: object, **_kwargs: object) -> dict[str, str]:
    raise BrowserError("Selenium Manager was asked for a driver; it must never download one here")


@dataclass(frozen=True)
class Problem:
    """One thing the page did wrong: a browser log entry (console, exception, CSP) or a CSP violation."""

    source: str
    message: str


class Browser:
    """One headless Chromium with a fresh profile; `open` a file, then read what it logged and shot."""

    def __init__(self, driver: webdriver.Chrome) -> None:
        self.driver = driver

    def open(self, page: Path, *, javascript: bool = True) -> None:
        """Load `page` from file:// with scripts on or off, after clearing what the last page logged."""
        self.driver.get_log("browser")
        self.cdp("Emulation.setScriptExecutionDisabled", value=not javascript)
        self.driver.get(page.resolve().as_uri())

    def problems(self) -> list[Problem]:
        """Console errors and warnings, uncaught exceptions and CSP violations since the page was opened."""
        logged = [
            Problem(str(e.get("source", "")), str(e.get("message", "")))
            for e in self.driver.get_log("browser")
            if e.get("level") in ("SEVERE", "WARNING")
        ]
        violations = self.driver.execute_script("return window.__cancelwireViolations || []")
        return logged + [Problem("securitypolicyviolation", str(v)) for v in violations]

    def viewport(self, width: int, height: int) -> None:
        """The size of the page's window in CSS pixels, from the next `open` on (at one pixel per pixel)."""
        self.cdp("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)

    def cdp(self, command: str, **params: Any) -> dict[str, Any]:
        result: dict[str, Any] = self.driver.execute_cdp_cmd(command, params)
        return result

    def js(self, script: str, *args: Any) -> Any:
        return self.driver.execute_script(script, *args)

    def screenshot(self, path: Path, *, full_page: bool = False) -> Path:
        """A PNG of the first screen, or of the whole page (`full_page`), cut at MAX_SHOT_HEIGHT pixels."""
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": full_page}
        if full_page:
            width, height = self.js(
                "return [document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
            )
            params["clip"] = {"x": 0, "y": 0, "width": width, "height": min(height, MAX_SHOT_HEIGHT), "scale": 1}
        shot = self.cdp("Page.captureScreenshot", **params)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path


def _options(profile: Path, network_log: bool = False) -> Options:
    options = Options()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={VIEWPORT[0]},{VIEWPORT[1]}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", **({"performance": "ALL"} if network_log else {})})
    if network_log:  # the DevTools protocol's Network and Page events, as HAR converters read them
        options.add_experimental_option("perfLoggingPrefs", {"enableNetwork": True, "enablePage": True})
    options.page_load_strategy = "normal"
    return options


def _check_installed() -> None:
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise BrowserError(f"{path} is missing: {INSTALL_HINT}")


@contextmanager
def browser(log_dir: Path | None = None, *, network_log: bool = False) -> Iterator[Browser]:
    """A started browser with a fresh profile, quit and removed afterwards; `log_dir` keeps chromedriver's log;
    `network_log` keeps the DevTools protocol's Network and Page events (`driver.get_log("performance")`)."""
    _check_installed()
    # Belt and braces: an explicit driver path already skips Selenium Manager; offline and guarded anyway.
    os.environ["SE_OFFLINE"] = "true"
    SeleniumManager.binary_paths = _no_selenium_manager  # type: ignore[method-assign]
    profile = Path(tempfile.mkdtemp(prefix="cancelwire-chromium-"))
    log = (log_dir / "chromedriver.log") if log_dir else os.devnull
    if log_dir:
        log_dir.mkdir(parents=True, exist_ok=True)
    try:
        driver = webdriver.Chrome(
            service=Service(str(CHROMEDRIVER), log_output=str(log)), options=_options(profile, network_log)
        )
    except WebDriverException as error:
        shutil.rmtree(profile, ignore_errors=True)
        raise BrowserError(f"Chromium did not start ({error.msg or error}); {INSTALL_HINT}") from error
    try:
        driver.command_executor.client_config.timeout = COMMAND_SECONDS
        driver.set_page_load_timeout(PAGE_SECONDS)
        driver.set_script_timeout(PAGE_SECONDS)
        page = Browser(driver)
        page.viewport(*VIEWPORT)
        page.cdp("Page.addScriptToEvaluateOnNewDocument", source=_LISTENER)
        yield page
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
