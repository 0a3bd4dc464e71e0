"""What the real-browser tests share: Debian's Chromium driven by Playwright (never a downloaded browser),
and a watch on what a page does that the tests forbid. Used by tests/test_browser.py (JupyterLab) and
tests/test_decks.py (the offline slides and site)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Optional

import pytest

from ci_kit import missing_tool

CHROMIUM = Path(os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium"))  # another Chromium-based browser: set it


# --- the browser ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        missing_tool(f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing_tool("Python playwright is not installed (pip install -e '.[test]')")
    with sync_playwright() as pw:
        # Every host name except loopback fails to resolve: a stray outside request still shows up as
        # a request (and fails the test) but never reaches the network or waits on it.
        b = pw.chromium.launch(executable_path=str(CHROMIUM),
                               args=["--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"])
        yield b
        b.close()


class Watch:
    """What a browser context does that the tests forbid: requests to other places, console errors,
    uncaught page errors, failed requests.

    ``excuse(text)`` (optional) returns why a console error is not the course's fault, with the evidence,
    or None: it is asked at ``check`` time, so it may read what a server logged meanwhile. An excused
    error is printed, never silently dropped."""

    def __init__(self, context, allowed, excuse: Optional[Callable[[str], Optional[str]]] = None) -> None:
        self.allowed, self.outside, self.errors, self.failed = allowed, [], [], []
        self.excuse = excuse
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
        self.errors.append(text)

    def check(self, where: str) -> None:
        if self.excuse is not None:
            for text in list(self.errors):
                reason = self.excuse(text)
                if reason is not None:
                    print(f"\n{where}: console error excused: {text}\n  because {reason}")
                    self.errors.remove(text)
        assert not self.outside, f"{where}: requests that leave the allowed places: {self.outside[:10]}"
        assert not self.errors, f"{where}: console errors: {self.errors[:10]}"
        assert not self.failed, f"{where}: failed requests: {self.failed[:10]}"
