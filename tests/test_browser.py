"""The lessons in a real browser: Debian's Chromium driven by Playwright.

1. JupyterLab (loopback, token-protected) serving copies of the lessons. Every lesson is opened in the
   real UI with its stored outputs, which must all render (figures as images, tables as tables, no
   console error). Lessons 00 and 02 are run at SMOKE size with Run > Run All Cells and must finish
   with every code cell numbered, the kernel idle and no error in any output; in lesson 02's explorer
   one slider is moved with the keyboard and the output under it must change. (Every lesson's
   execution at SMOKE size is checked headless, once, in tests/test_standalone.py: running them all
   again here would repeat that run, not test anything only a browser shows.)
2. The offline slides and site (build/slides, build/site) opened from file://: no request leaves
   file:/data:, no console error, the slides advance on ArrowRight, the widget views render.

Everything is asserted on the DOM, the requests and the console, never on pixels. Playwright never
downloads a browser here: it drives /usr/bin/chromium (`.ci/run` installs it with apt). Without it
the tests skip, except under CI (the CI variable set), where a missing browser is a failure.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

import pytest

from conftest import REPO, lesson_notebooks

pytestmark = pytest.mark.slow

CHROMIUM = Path(os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium"))  # another Chromium-based browser: set it
LESSON_TIMEOUT_S = 150      # one SMOKE lesson, opened and run in the UI (they take seconds; CI is loaded)
VENV_BIN = Path(sys.executable).parent

# Console errors that are not the course's fault, each with the reason it is harmless. Matched
# against "<type>: <text>" of every console message of type "error" and every uncaught page error.
BENIGN_CONSOLE_ERRORS: dict[str, str] = {}


# --- the browser ------------------------------------------------------------------------------

def _no_browser(reason: str):
    """Skip on a developer's machine when a tool is missing; under CI fail instead."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set: .ci/run must install it)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        _no_browser(f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _no_browser("Python playwright is not installed (pip install -e '.[test]')")
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


# --- JupyterLab with SMOKE copies of the lessons --------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _api(port: int, token: str, path: str, method: str = "GET"):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        body = resp.read()
    return json.loads(body) if body else None


def _kill_tree(proc: subprocess.Popen) -> None:
    import psutil

    try:
        family = [proc.pid] + [c.pid for c in psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        family = []
    for pid in family:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    _, alive = psutil.wait_procs([psutil.Process(p) for p in family if psutil.pid_exists(p)], timeout=20)
    for p in alive:
        p.kill()
    proc.wait(timeout=20)


RUN_IN_LAB = ("00", "02")  # the environment check, and the lesson whose explorer is a widget


def _smoke_copies(folder: Path) -> list[str]:
    """Lessons 00 and 02 parameterised with SMOKE=True, outputs cleared (every count and output the test
    sees comes from this run), written into `folder`; every lesson as stored into `folder/stored`.
    Returns the file names of the SMOKE copies."""
    import nbformat
    from papermill.parameterize import parameterize_notebook

    names = []
    (folder / "stored").mkdir()
    for path in lesson_notebooks():
        shutil.copy(path, folder / "stored" / path.name)
        if path.name[:2] not in RUN_IN_LAB:
            continue
        nb = nbformat.read(path, as_version=4)
        nb.metadata.setdefault("papermill", {})  # what papermill's own runs add before parameterising
        nb.metadata.pop("widgets", None)          # saved widget state of the stored outputs, cleared below
        for cell in nb.cells:
            cell.metadata.setdefault("tags", [])
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        nbformat.write(parameterize_notebook(nb, {"SMOKE": True}), folder / path.name)
        names.append(path.name)
    return names


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab on 127.0.0.1 serving SMOKE copies of the lessons; yields (base URL, token, port, names)."""
    if not (VENV_BIN / "jupyter-lab").exists():
        pytest.skip("needs JupyterLab in this venv (pip install -e '.[lab]')")
    root = tmp_path_factory.mktemp("lab")
    lessons, settings = root / "lessons", root / "settings" / "@jupyterlab" / "notebook-extension"
    lessons.mkdir()
    settings.mkdir(parents=True)
    # Attach every cell to the DOM (the default leaves off-screen cells out of it, or unrendered).
    (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    names = _smoke_copies(lessons)
    token, port = secrets.token_hex(24), _free_port()
    env = {**os.environ, "JUPYTER_TOKEN": token,           # the token: environment only, never argv
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
           "JUPYTER_RUNTIME_DIR": str(root / "runtime"), "JUPYTERLAB_SETTINGS_DIR": str(root / "settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(root / "workspaces"),
           "COURSE_LEDGER": str(root / "ledger.json"), "COURSE_SCRATCH": str(root / "scratch")}
    for var in ("COURSE_STRICT_CHECKS", "MPLBACKEND"):  # exercises print "not attempted"; plots inline
        env.pop(var, None)
    cmd = [str(VENV_BIN / "jupyter-lab"), "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           "--ServerApp.port_retries=0", f"--ServerApp.root_dir={lessons}", "--LabApp.news_url=None",
           "--LabApp.expose_app_in_browser=True",  # window.jupyterapp: open documents without reloading the page
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")  # CI containers run as root
    log = root / "lab.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=lessons, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, f"JupyterLab exited early:\n{log.read_text()}"
            try:
                _api(port, token, "/api/status")
                break
            except OSError:
                assert time.monotonic() < deadline, f"JupyterLab did not answer:\n{log.read_text()}"
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}", token, port, names
    finally:
        _kill_tree(proc)


def _loopback(port: int):
    def allowed(url: str) -> bool:
        u = urlparse(url)
        # blob: and data: never leave the page (JupyterLab makes blob: URLs for downloads and workers).
        return u.scheme in ("data", "blob") or (u.scheme in ("http", "ws") and u.hostname == "127.0.0.1" and u.port == port)
    return allowed


_RUN_STATE = """() => {
  const cells = [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-CodeCell')];
  const stderr = [...document.querySelectorAll('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
      .map(e => e.textContent);
  const errors = stderr.filter(t => /Traceback|Error\\b/.test(t));
  if (errors.length) return {state: 'error', errors: errors.map(t => t.slice(-1500))};
  const prompts = cells.map(c => (c.querySelector('.jp-InputArea-prompt') || {}).textContent || '');
  const busy = document.querySelector('.jp-Notebook-ExecutionIndicator')?.dataset.status !== 'idle';
  const waiting = prompts.filter(p => !/^\\[\\d+\\]:$/.test(p.trim())).length;
  return cells.length && !waiting && !busy ? {state: 'done', cells: cells.length, stderr: stderr.map(t => t.slice(0, 200))} : null;
}"""


def _menu(page, menu: str, item: str) -> None:
    """Click a menu bar entry, then one of its items, as a student would."""
    page.locator(".lm-MenuBar-item", has_text=re.compile(f"^{menu}$")).click()
    page.locator(".lm-Menu-item:visible", has=page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{item}$"))).click()


def _start_run_all(page) -> None:
    """View > Expand All Code (a hidden input has no prompt in the DOM), then Run > Run All Cells."""
    _menu(page, "View", "Expand All Code")
    _menu(page, "Run", "Run All Cells")


_SEEN = """() => ({
  indicator: document.querySelector('.jp-Notebook-ExecutionIndicator')?.dataset.status,
  prompts: [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')].map(p => p.textContent.trim()),
  dialogs: [...document.querySelectorAll('.jp-Dialog')].map(d => d.textContent.slice(0, 300)),
})"""


def _move_explorer_slider(page) -> None:
    """Lesson 02's explorer: ArrowRight on the 'batch' slider re-runs the comparison below it (the
    "timing ..." line first, then the new result, which replaces the stale one)."""
    slider = page.locator(".widget-slider", has=page.locator("label.widget-label", has_text=re.compile(r"^batch$")))
    output = page.locator(".widget-vbox .widget-output").first
    before_value, before_text = slider.locator(".widget-readout").inner_text(), output.inner_text()
    assert f"batch {before_value}:" in before_text, f"the explorer's first comparison is missing: {before_text!r}"
    slider.locator(".noUi-handle").focus()
    page.keyboard.press("ArrowRight")
    after_value = slider.locator(".widget-readout").inner_text()
    assert after_value != before_value, "ArrowRight did not move the slider"
    page.wait_for_function("([el, want]) => el.textContent.includes(want)",
                           arg=[output.element_handle(), f"batch {after_value}: needs"], timeout=60_000)
    after_text = output.inner_text()
    assert f"batch {before_value}:" not in after_text, f"the stale result is still shown: {after_text!r}"
    assert "ms/step" in after_text, f"the output does not show a timing for {after_value}: {after_text!r}"


def _finish(page, name: str, port: int, token: str) -> None:
    """The lesson's kernel is idle; lesson 02's slider works; then the tab closes and the kernel shuts down."""
    session = next(s for s in _api(port, token, "/api/sessions") if s["path"] == name)
    assert session["kernel"]["execution_state"] == "idle", f"{name}: kernel {session['kernel']['execution_state']}"
    if name.startswith("02_"):
        _move_explorer_slider(page)
    page.close()
    _api(port, token, f"/api/sessions/{session['id']}", method="DELETE")


LANES = 2  # lessons open at once, each in its own tab and kernel: the test waits on kernels more than it computes


def test_lessons_00_and_02_run_in_jupyterlab_and_the_explorer_slider_updates(browser, lab):
    base, token, port, names = lab
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    watch = Watch(context, _loopback(port))
    pending, running, timings = list(names), {}, {}
    try:
        while pending or running:
            while pending and len(running) < LANES:
                name, start = pending.pop(0), time.monotonic()
                page = context.new_page()
                # Its own workspace per tab; the token once, in the first URL: the server answers with a cookie.
                login = "" if name != names[0] else f"&token={token}"
                page.goto(f"{base}/lab/workspaces/{name[:-6]}/tree/{name}?reset{login}")
                page.wait_for_selector('.jp-Notebook-ExecutionIndicator[data-status="idle"]', timeout=60_000)
                _start_run_all(page)
                running[page] = (name, start)
            next(iter(running)).wait_for_timeout(500)  # lets Playwright deliver the pages' events meanwhile
            for page, (name, start) in list(running.items()):
                result = page.evaluate(_RUN_STATE)
                # Under load JupyterLab can ask which kernel to start (its kernel list came late); a
                # student accepts the preselected Python 3 kernel, and so does the test.
                dialog = page.locator(".jp-Dialog", has_text="Select Kernel")
                if result is None and dialog.count():
                    dialog.locator(".jp-mod-accept").click()
                    _start_run_all(page)
                if result is None:
                    assert time.monotonic() - start < LESSON_TIMEOUT_S, \
                        f"{name}: Run All did not finish in {LESSON_TIMEOUT_S} s: {page.evaluate(_SEEN)}"
                    continue
                assert result["state"] == "done", f"{name}: an error output after Run All:\n" + "\n---\n".join(result["errors"])
                assert result["cells"] >= 10, f"{name}: only {result['cells']} code cells in the DOM"
                if result["stderr"]:  # not errors (warnings, progress): shown, not failed
                    print(f"\n{name}: stderr output:", result["stderr"])
                _finish(page, name, port, token)
                del running[page]
                watch.check(name)
                timings[name[:2]] = round(time.monotonic() - start, 1)
    finally:
        print(f"\nbrowser: seconds per lesson, {LANES} at a time (open, run all, check):", timings)
        context.close()


_RENDERED = """() => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  if (!panel) return null;
  const cells = panel.querySelectorAll('.jp-Notebook .jp-CodeCell');
  return {cells: cells.length,
          withOutput: [...cells].filter(c => c.querySelector('.jp-OutputArea-output')).length,
          images: panel.querySelectorAll('.jp-OutputArea-output img').length,
          tables: panel.querySelectorAll('.jp-OutputArea-output table').length,
          raw: [...panel.querySelectorAll('.jp-OutputArea-output')].filter(o => o.textContent.includes('<table')).length};
}"""


def test_every_lesson_opens_in_jupyterlab_with_its_stored_outputs_rendered(browser, lab):
    """What a student sees first, before running anything: every stored output rendered by the real
    frontend (a figure as an image, a results table as a table, not as markup), no console error.
    (Widgets show their saved views only after a run: lesson 02's explorer is checked live above.)"""
    import nbformat

    base, token, port, _ = lab
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    watch = Watch(context, _loopback(port))
    try:
        page = context.new_page()
        page.goto(f"{base}/lab/workspaces/stored?reset&token={token}")
        page.wait_for_function("() => window.jupyterapp?.commands.hasCommand('docmanager:open')", timeout=60_000)
        for path in lesson_notebooks():
            nb = nbformat.read(path, as_version=4)
            code = [c for c in nb.cells if c.cell_type == "code"]
            data = [o.get("data", {}) for c in code for o in c.get("outputs", [])]
            want = {"cells": len(code), "withOutput": sum(bool(c.get("outputs")) for c in code),
                    "images": sum(any(k.startswith("image/") for k in d) for d in data),
                    "tables": sum("<table" in "".join(d.get("text/html", "")) for d in data)}
            # File > Open, without reloading the page: one JupyterLab serves all twelve lessons.
            page.evaluate("async p => { await window.jupyterapp.commands.execute('docmanager:open', {path: p}); }", f"stored/{path.name}")
            page.wait_for_function(f"() => ({_RENDERED})()?.cells === {want['cells']}", timeout=60_000)
            got = page.evaluate(_RENDERED)
            assert got["withOutput"] >= want["withOutput"], f"{path.name}: outputs rendered in {got['withOutput']} cells, stored in {want['withOutput']}"
            assert got["images"] >= want["images"], f"{path.name}: {got['images']} figures rendered of {want['images']}"
            assert got["tables"] >= want["tables"], f"{path.name}: {got['tables']} tables rendered of {want['tables']}"
            assert not got["raw"], f"{path.name}: {got['raw']} outputs show raw table markup"
            # Its kernel has started before the next lesson opens. The tabs stay open (closing one while
            # its saved widget views render throws "Disposed"); they close with the browser context.
            page.wait_for_selector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator[data-status="idle"]',
                                   timeout=60_000)
            watch.check(path.name)
        page.close()
    finally:
        context.close()


# --- the offline slides and site, from file:// ------------------------------------------------------

SLIDES, SITE = REPO / "build" / "slides", REPO / "build" / "site"


@pytest.fixture(scope="module")
def offline_pages():
    """Builds the slides and the site (make slides site), returns every page to open."""
    makefile = (REPO / "Makefile").read_text()
    missing = [f"tools/{t}.py" for t in ("slides", "site") if not (REPO / "tools" / f"{t}.py").exists()]
    missing += [f"Makefile target {t}" for t in ("slides", "site") if not re.search(rf"^{t}:", makefile, re.M)]
    if missing:
        pytest.skip(f"the offline slides/site are not built by this checkout yet: no {', '.join(missing)}")
    if shutil.which("make") is None:
        pytest.skip("needs make")
    if shutil.which("npm") is None and not (REPO / "build" / "web" / "node_modules").is_dir():
        _no_browser("make slides / make site need npm (Node.js) for their pinned browser assets")
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    venv = VENV_BIN.parent
    # -o: never reinstall the venv from inside a test (this one is already set up).
    built = subprocess.run(["make", "-o", f"{venv}/.course-installed", "slides", "site", f"VENV={venv}"],
                           cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, f"make slides site failed:\n{built.stdout[-3000:]}\n{built.stderr[-3000:]}"
    slides = sorted(SLIDES.glob("*.slides.html"))
    assert len(slides) == len(lesson_notebooks()), f"one slides page per lesson: {[p.name for p in slides]}"
    site = sorted(SITE.rglob("*.html"))
    assert SITE / "index.html" in site
    # The site's own copies of the slides are opened as slides too.
    return slides + [p for p in site if p.name.endswith(".slides.html")], [p for p in site if not p.name.endswith(".slides.html")]


def _local(url: str) -> bool:
    # data: and blob: are made inside the page; nothing else but local files may be fetched.
    return urlparse(url).scheme in ("file", "data", "blob")


_WIDGETS_STATE = """() => {
  const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]');
  const rendered = [...views].filter(s => s.previousElementSibling?.matches('.widget-subarea')
                                          && s.previousElementSibling.querySelector('.jupyter-widgets'));
  return {views: views.length, rendered: rendered.length};
}"""


# nbconvert's reveal template loads reveal.js through require.js: the Reveal object is a module, not a global.
_REVEAL = ("(window.Reveal || Object.values(window.requirejs?.s?.contexts?._?.defined || {})"
           ".find(m => m && typeof m.getIndices === 'function'))")


def _check_widgets(page) -> int:
    views = page.evaluate(_WIDGETS_STATE)["views"]
    if views:
        page.wait_for_function(f"() => ({_WIDGETS_STATE})().rendered === {views}", timeout=30_000)
    return views


def _check_links(page, path: Path) -> None:
    hrefs = page.eval_on_selector_all("a[href]", "els => els.map(a => a.getAttribute('href'))")
    for href in hrefs:
        u = urlparse(href)
        if u.scheme or href.startswith("#"):
            continue
        target = (path.parent / u.path).resolve()
        assert target.exists(), f"{path.name}: link to a missing file {href}"


def test_offline_slides_and_site_work_from_file_urls(browser, offline_pages):
    slides, site = offline_pages
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    watch = Watch(context, _local)
    widget_views = 0
    try:
        for path in slides:
            page = context.new_page()
            page.goto(path.as_uri())
            page.wait_for_function(f"() => {_REVEAL}?.isReady()", timeout=30_000)
            total = page.evaluate(f"() => {_REVEAL}.getTotalSlides()")
            assert total >= 6, f"{path.name}: only {total} slides"
            before = page.evaluate(f"() => {_REVEAL}.getIndices()")
            page.keyboard.press("ArrowRight")
            page.wait_for_function(f"old => JSON.stringify({_REVEAL}.getIndices()) !== JSON.stringify(old)",
                                   arg=before, timeout=10_000)
            after = page.evaluate(f"() => {_REVEAL}.getIndices()")
            # navigationMode "linear": the next slide is the first sub-slide below, or the next column.
            assert (after["h"], after.get("v", 0)) in {(before["h"], before.get("v", 0) + 1), (before["h"] + 1, 0)}, \
                f"{path.name}: ArrowRight went from {before} to {after}"
            widget_views += _check_widgets(page)
            page.close()
            watch.check(path.name)
        for path in site:
            page = context.new_page()
            page.goto(path.as_uri())
            page.wait_for_load_state("load")
            widget_views += _check_widgets(page)
            _check_links(page, path)
            page.close()
            watch.check(str(path.relative_to(SITE)))
    finally:
        context.close()
    assert widget_views, "lesson 02's explorer is a widget: its saved view must appear in the slides or the site"
