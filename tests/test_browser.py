"""The lessons in a real browser: Debian's Chromium driven by Playwright.

1. JupyterLab (loopback, token-protected) serving copies of the lessons. Every lesson is opened in the
   real UI with its stored outputs, which must all render (figures as images, tables as tables, no
   console error). Lessons 00 and 02 are run at SMOKE size with Run > Run All Cells and must finish
   with every code cell numbered, the kernel idle and no error in any output; in lesson 02's explorer
   one slider is moved with the keyboard and the output under it must change. (Every lesson's
   execution is checked headless, once, at its default size, in tests/test_standalone.py: running
   them all again here would repeat that run, not test anything only a browser shows.)
(The offline slides and site, opened from file://, are tests/test_decks.py: a module of its own, so
that the two browser modules run on the two workers at once.)

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
import warnings
from pathlib import Path
from urllib.parse import urlparse

import pytest

from browser_kit import Watch, browser  # noqa: F401 (browser is a fixture)
from conftest import NOTEBOOK_DIR, REPO, every_notebook, lesson_notebooks

pytestmark = pytest.mark.slow

LESSON_TIMEOUT_S = 150      # one SMOKE lesson, opened and run in the UI (they take seconds; CI is loaded)
VENV_BIN = Path(sys.executable).parent


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
    # JupyterLab and its kernels serve a throwaway folder: nothing to save, so they are killed, server
    # first (with SIGTERM to every process this teardown took 20 s, in fresh-clone CI run 6).
    for pid in family:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    psutil.wait_procs([psutil.Process(p) for p in family if psutil.pid_exists(p)], timeout=10)
    proc.wait(timeout=10)


# Run All in JupyterLab: the environment check, the course's key lesson, and its deeper part, whose explorer is
# a widget (named as JupyterLab's file browser shows them, relative to the folder it serves).
RUN_IN_LAB = ("00_environment_check.ipynb", "02_iris_cpu_vs_gpu.ipynb", "deeper/02_iris_cpu_vs_gpu.ipynb")
EXPLORER = "deeper/02_iris_cpu_vs_gpu.ipynb"


def _smoke_copies(folder: Path) -> list[str]:
    """The notebooks of RUN_IN_LAB parameterised with SMOKE=True, outputs cleared (every count and output the
    test sees comes from this run), written into `folder` (a deeper one into `folder/deeper`); every core
    lesson as stored into `folder/stored`. Returns the SMOKE copies' paths relative to `folder`."""
    import nbformat
    from papermill.parameterize import parameterize_notebook

    names = []
    (folder / "stored").mkdir()
    (folder / "deeper").mkdir()
    for path in lesson_notebooks():
        shutil.copy(path, folder / "stored" / path.name)
    for path in every_notebook():
        name = path.relative_to(NOTEBOOK_DIR).as_posix()
        if name not in RUN_IN_LAB:
            continue
        nb = nbformat.read(path, as_version=4)
        nb.metadata.setdefault("papermill", {})  # what papermill's own runs add before parameterising
        nb.metadata.pop("widgets", None)          # saved widget state of the stored outputs, cleared below
        for cell in nb.cells:
            cell.metadata.setdefault("tags", [])
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        nbformat.write(parameterize_notebook(nb, {"SMOKE": True}), folder / name)
        names.append(name)
    return names


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab on 127.0.0.1 serving SMOKE copies of the lessons; yields (base URL, token, port, names,
    the server's log file)."""
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
        yield f"http://127.0.0.1:{port}", token, port, names, log
    finally:
        _kill_tree(proc)


# A race in jupyter_server, not in the course: a kernel is in the server's list a moment before the
# server stamps its last_activity, and a GET /api/kernels in that moment fails in kernel_model (reading
# the unset trait raises traitlets' TraitError) with a 500; jupyter_server 2.21's list_kernels skips only
# HTTPError and KeyError (the same window is reported upstream as jupyter-server/enterprise_gateway#1395).
# JupyterLab polls again a few seconds later and a student sees nothing. Seen once in 17 fresh-clone CI
# runs (lesson 06's kernel starting in the stored-outputs test). Excused only while the server's log
# holds one such traceback for each excused 500.
_KERNEL_LIST_500 = re.compile(r"status of 500 \(Internal Server Error\) at http://127\.0\.0\.1:\d+/api/kernels\?\d*$")
_KERNEL_LIST_RACE = re.compile(r"in kernel_model\n(?:[ \t].*\n){1,30}?\s*traitlets\.traitlets\.TraitError: The 'last_activity' trait "
                               r"of a ServerKernelManager instance expected a datetime, not the NoneType None")


def _kernel_list_race(log: Path):
    """A Watch excuse: a 500 on the kernel list is excused when the server logged the race above for it."""
    excused = [0]

    def excuse(text: str):
        if not _KERNEL_LIST_500.search(text):
            return None
        logged = len(_KERNEL_LIST_RACE.findall(log.read_text(errors="replace")))
        if logged <= excused[0]:
            return None
        excused[0] += 1
        return (f"JupyterLab's server logged jupyter_server's kernel-list race (last_activity unset in kernel_model) "
                f"{logged} time(s) in {log.name}")
    return excuse


def _loopback(port: int):
    def allowed(url: str) -> bool:
        u = urlparse(url)
        # blob: and data: never leave the page (JupyterLab makes blob: URLs for downloads and workers).
        return u.scheme in ("data", "blob") or (u.scheme in ("http", "ws") and u.hostname == "127.0.0.1" and u.port == port)
    return allowed


# Each tab has its own workspace with one notebook: its cells are read even while another main-area
# widget hides the notebook (seen once in CI: every cell numbered, the kernel idle, the panel hidden).
_RUN_STATE = """() => {
  const cells = [...document.querySelectorAll('.jp-NotebookPanel .jp-Notebook .jp-CodeCell')];
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


# The code cells' prompts ("[3]:", "[*]:", "[ ]:"), read the same way by every check below.
_PROMPTS = ("[...document.querySelectorAll('.jp-NotebookPanel .jp-Notebook .jp-CodeCell .jp-InputArea-prompt')]"
            ".map(p => p.textContent.trim())")

# Run All is not running, or no longer: the kernel is idle, no cell runs or waits ([*] marks both: Run
# All marks every queued cell at once) and some code cell has not run ([ ]).
_STALLED = """() => {
  const prompts = %s;
  const idle = document.querySelector('.jp-Notebook-ExecutionIndicator')?.dataset.status === 'idle';
  return idle && !prompts.includes('[*]:') && prompts.some(p => !/^\\[\\d+\\]:$/.test(p));
}""" % _PROMPTS
RUN_ALL_RETRY_S = 20  # lesson 00's first cell starts within seconds of the click, even under load

# The main area's tabs, the current one marked (what a student sees above the notebook).
_TABS = ("[...document.querySelectorAll('.lm-DockPanel .lm-TabBar-tab')]"
         ".map(t => t.textContent.trim() + (t.classList.contains('lm-mod-current') ? ' (current)' : ''))")
_SEEN = """() => ({
  indicator: document.querySelector('.jp-Notebook-ExecutionIndicator')?.dataset.status,
  prompts: %s,
  dialogs: [...document.querySelectorAll('.jp-Dialog')].map(d => d.textContent.slice(0, 300)),
  notebookHidden: document.querySelector('.jp-NotebookPanel')?.classList.contains('lm-mod-hidden'),
  tabs: %s,
})""" % (_PROMPTS, _TABS)

# The notebook back in front if another widget hid it (a student would click its tab), and what hid it.
_SHOW_NOTEBOOK = """() => {
  const panel = document.querySelector('.jp-NotebookPanel');
  if (!panel.classList.contains('lm-mod-hidden')) return null;
  const tabs = %s;
  window.jupyterapp.shell.activateById(panel.id);
  return tabs;
}""" % _TABS


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
    if name == EXPLORER:
        hidden_by = page.evaluate(_SHOW_NOTEBOOK)
        if hidden_by is not None:
            # A warning, not a print: pytest shows it in its summary of a passing run too.
            warnings.warn(f"{name}: another widget was in front of the notebook after Run All; tabs: {hidden_by}")
        _move_explorer_slider(page)
    page.close()
    _api(port, token, f"/api/sessions/{session['id']}", method="DELETE")


LANES = 2  # lessons open at once, each in its own tab and kernel: the test waits on kernels more than it computes


def test_lessons_00_and_02_and_its_deeper_part_run_in_jupyterlab_and_the_explorer_slider_updates(browser, lab):
    base, token, port, names, log = lab
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    watch = Watch(context, _loopback(port), _kernel_list_race(log))
    pending, running, timings, clicks = list(names), {}, {}, {}
    try:
        while pending or running:
            while pending and len(running) < LANES:
                name, start = pending.pop(0), time.monotonic()
                page = context.new_page()
                # Its own workspace per tab; the token once, in the first URL: the server answers with a cookie.
                login = "" if name != names[0] else f"&token={token}"
                page.goto(f"{base}/lab/workspaces/{name[:-6].replace('/', '-')}/tree/{name}?reset{login}")
                page.wait_for_selector('.jp-Notebook-ExecutionIndicator[data-status="idle"]', timeout=60_000)
                _start_run_all(page)
                running[page] = (name, start)
                clicks[page] = [time.monotonic()]
            next(iter(running)).wait_for_timeout(500)  # lets Playwright deliver the pages' events meanwhile
            for page, (name, start) in list(running.items()):
                result = page.evaluate(_RUN_STATE)
                # Under load JupyterLab can ask which kernel to start (its kernel list came late); a
                # student accepts the preselected Python 3 kernel, and so does the test.
                dialog = page.locator(".jp-Dialog", has_text="Select Kernel")
                if result is None and dialog.count():
                    dialog.locator(".jp-mod-accept").click()
                    _start_run_all(page)
                    clicks[page].append(time.monotonic())
                # Seen twice in loaded CI runs: the indicator said idle, Run All was clicked, and no cell
                # ever started (every prompt stayed "[ ]:" for 150 s; 2026-12-02), or only the first
                # cell ran ("[1]:", the rest "[ ]:" for 150 s, no error output; fresh-clone run 21,
                # 2026-12-03). A student whose Run All stopped clicks it again; so does the test, at most
                # twice more, and says so in its output (an error output still fails at once, above).
                elif (result is None and len(clicks[page]) < 3 and time.monotonic() - clicks[page][-1] > RUN_ALL_RETRY_S
                      and page.evaluate(_STALLED)):
                    warnings.warn(f"{name}: Run All had stopped {RUN_ALL_RETRY_S} s after the click with cells not run and "
                                  f"the kernel idle: clicked Run All again; {page.evaluate(_SEEN)['prompts']}")
                    _start_run_all(page)
                    clicks[page].append(time.monotonic())
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
                timings[name[:-6]] = round(time.monotonic() - start, 1)
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

    base, token, port, _, log = lab
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    watch = Watch(context, _loopback(port), _kernel_list_race(log))
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


def test_only_the_logged_kernel_list_race_excuses_a_500(tmp_path):
    """The excuse above bites: jupyter_server's own kernel_model, on a kernel caught in the moment
    before its last_activity is stamped, logged the way the server logs an uncaught exception; one
    logged traceback excuses one 500 on the kernel list, and nothing else."""
    import logging

    from jupyter_server.services.kernels.kernelmanager import MappingKernelManager, ServerKernelManager
    from tornado.log import LogFormatter
    from traitlets import TraitError

    manager = MappingKernelManager()
    manager._kernels["k1"] = ServerKernelManager()  # listed, last_activity not stamped yet
    log = tmp_path / "lab.log"
    handler = logging.FileHandler(log)
    handler.setFormatter(LogFormatter(color=False))
    logger = logging.getLogger("course.test.kernel_list_race")
    logger.addHandler(handler)
    error = "console: Failed to load resource: the server responded with a status of 500 (Internal Server Error) at http://127.0.0.1:8123/api/kernels?1764780000000"
    excuse = _kernel_list_race(log)
    try:
        assert excuse(error) is None, "nothing logged yet: no excuse"
        try:
            manager.list_kernels()
            raise AssertionError("jupyter_server no longer fails here: the excuse can go")
        except TraitError:
            logger.exception("Uncaught exception GET /api/kernels?1764780000000 (127.0.0.1)")
        handler.flush()
        assert excuse("console: Uncaught TypeError: x is undefined at http://127.0.0.1:8123/lab") is None
        assert excuse(error.replace("/api/kernels?", "/api/sessions?")) is None
        assert excuse(error) is not None
        assert excuse(error) is None, "one logged traceback excuses one 500"
    finally:
        logger.removeHandler(handler)
        handler.close()
