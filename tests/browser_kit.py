"""What the real-browser tests share: Debian's Chromium driven by Playwright (never a downloaded browser),
and a watch on what a page does that the tests forbid. Used by tests/test_browser.py (JupyterLab) and
tests/test_decks.py (the offline slides and site)."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

CHROMIUM = Path(os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium"))  # another Chromium-based browser: set it

# Console errors that are not the course's fault, each with the reason it is harmless. Matched
# against "<type>: <text>" of every console message of type "error" and every uncaught page error.
BENIGN_CONSOLE_ERRORS: dict[str, str] = {}


# --- the browser ------------------------------------------------------------------------------

def no_browser(reason: str):
    """Skip on a developer's machine when a tool is missing; under CI fail instead."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set: .ci/run must install it)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        no_browser(f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        no_browser("Python playwright is not installed (pip install -e '.[test]')")
    with sync_playwright() as pw:
        # Every host name except loopback fails to resolve: a stray outside request still shows up as
        # a request (and fails the test) but never reaches the network or waits on it.
        b = pw.chromium.launch(executable_path=str(CHROMIUM),
                               args=["--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"])
        yield b
        b.close()


class Watch:
    """What a browser context does that the tests forbid: requests to other places, console errors,
    uncaught page errors, failed requests."""

    def __init__(self, context, allowed) -> None:
        self.allowed, self.outside, self.errors, self.failed = allowed, [], [], []
        context.on("request", self._request)
        context.on("requestfailed", lambda r: self.failed.append(f"{r.url} ({r.failure})"))
        context.on("page", self.attach)

    def attach(self, page) -> None:
        page.on("console", lambda m: m.type == "error" and self._error(f"console: {m.text} at {m.location.get('url')}"))
        page.on("pageerror", lambda e: self._error(f"pageerror: {e}"))
        page.on("websocket", lambda ws: self._request_url(ws.url))

    def _request(self, request) -> None:
        self._request_url(request.url)

    def _request_url(self, url: str) -> None:
        if not self.allowed(url):
            self.outside.append(url)

    def _error(self, text: str) -> None:
        if not any(re.search(pattern, text) for pattern in BENIGN_CONSOLE_ERRORS):
            self.errors.append(text)

    def check(self, where: str) -> None:
        assert not self.outside, f"{where}: requests that leave the allowed places: {self.outside[:10]}"
        assert not self.errors, f"{where}: console errors: {self.errors[:10]}"
        assert not self.failed, f"{where}: failed requests: {self.failed[:10]}"
