"""Shared fixtures: executing a notebook headless the way ``make run`` does."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Kernels started by the tests (lesson runs, nbval) inherit this: course_utils.progress shows its live
# status line only in an interactive frontend, never in outputs that are compared or stored.
os.environ.setdefault("COURSE_PROGRESS", "0")
# Two pytest workers, and the kernels and processes each starts, share the cores. By default an OpenMP
# thread (torch's CPU threads) that waits for work spins, burning the time the other worker needs:
# nbval of lessons 02, 05, 07 and 10 on two workers took 91 s with the default and 70 s with PASSIVE (sleeping
# waits), measured 2026-12-02 on the 2-core CI machine. The lessons' torchrun workers get the same
# setting from course_utils.launch.child_environment. (Read when torch loads: every process started
# from here, not this one.)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
NOTEBOOK_DIR = REPO / "notebooks"


_PREEXISTING: set[int] = set()


@pytest.fixture(autouse=True, scope="module")
def _note_preexisting_children():
    """Remember this process's children before each test module (e.g. a multiprocessing forkserver
    another module started): they are not leaks of the module's own launches. Autouse, so it runs
    before the module's other module-scoped fixtures."""
    from course_utils.launch import _descendants

    _PREEXISTING.clear()
    _PREEXISTING.update(_descendants(os.getpid()))
    yield


def new_children() -> list[int]:
    """Live descendants of this test process started since the current test module began."""
    from course_utils.launch import _descendants, process_alive

    return [p for p in _descendants(os.getpid()) if process_alive(p) and p not in _PREEXISTING]


def lesson_notebooks() -> list[Path]:
    """The core lessons (notebooks/NN_*.ipynb)."""
    from course_utils.paths import core_notebooks

    return core_notebooks(NOTEBOOK_DIR)


def every_notebook() -> list[Path]:
    """Cores, then their deeper notebooks (notebooks/deeper/NN_*.ipynb)."""
    from course_utils.paths import all_notebooks

    return all_notebooks(NOTEBOOK_DIR)


# --- Two workers (`make test`: pytest-xdist, --dist loadfile) ------------------------------------------
# A file is one unit of work: the tests of one module share its module fixtures (a browser, a
# JupyterLab, a built deck). One exception: each lesson's run in tests/test_standalone.py (its default-size
# execution, the course's only one in `make test`) is a unit of its own, so the lessons spread over
# both workers; what they share (the wheel and a fresh venv) is session-scoped, built once per worker.
# (--dist loadgroup would say this with marks, but pytest-xdist 3.8 marks groups through
# Node._nodeid, which pytest 9 no longer reads: the groups fall apart.) xdist hands each worker the next
# unit in collection order when its queue runs low, so the units are sorted longest first (the classic
# longest-processing-time rule): the two workers then end close together.
# Seconds of each slow unit in fresh-clone `.ci/run` 17 on the 2-core CI machine (setup + tests +
# teardown, under the other worker's load; test_sharding as cut since, test_ddp as in run 24,
# test_decks as in run 30). A lesson's run: its seconds in results/cpu-ci.json scaled by LESSON_LOAD,
# the median ratio of the two in that run.
# (Lessons 10 and 11 ran 2.8 and 2.4 times their quiet figures there; ordered by those figures they
# started together, both many processes at once, and run 18 took 755 s of pytest against 673 s in run
# 17, where the deck test ran beside lesson 11: so they are not.) Unlisted files: short.
MODULE_SECONDS = {"tests/test_decks.py": 122, "tests/test_browser.py": 100, "tests/test_ddp.py": 14,
                  "tests/test_jupyterhub.py": 33, "tests/test_packaging.py": 31, "tests/test_launch.py": 24,
                  "tests/test_run.py": 19, "tests/test_sharding.py": 15, "tests/test_memplan.py": 12,
                  "tests/test_checkpoint.py": 11, "tests/test_progress.py": 8}
LESSON_LOAD = 1.55
LESSON_RUN = "tests/test_standalone.py::test_each_lesson_alone_from_the_wheel_shows_its_stored_outputs_and_its_checks_bite["


def _unit(nodeid: str) -> str:
    """The unit of work a test belongs to: a lesson's run, else its file."""
    return nodeid if nodeid.startswith(LESSON_RUN) else nodeid.split("::", 1)[0]


def _lesson_seconds() -> dict[str, float]:
    import json

    try:
        card = json.loads((REPO / "results" / "cpu-ci.json").read_text())
        seconds = {f"{LESSON_RUN}{name}]": LESSON_LOAD * float(r["seconds"]) for name, r in card["notebooks"].items()}
        # a Chinese lesson runs the English lesson's code: its seconds
        seconds.update({f"{LESSON_RUN}zh/{name}]": s for name, s in ((k[len(LESSON_RUN):-1], v) for k, v in seconds.items())
                        if "/" not in name})
        return seconds
    except (OSError, ValueError, KeyError, TypeError):
        return {}


# The four longest units go first, in this order, so the two process-heavy deeper notebooks (10 compiles with
# Inductor's worker processes, 11 launches up to four ranks) each run beside a browser test rather than
# beside each other: run 17 above, where they started together, was 82 s slower in all. (Fresh-clone
# runs of 2026-12-05 paired them again by the estimates alone: deeper/10 took 78 to 100 s, 11 81 to 95 s.)
FIRST = [f"{LESSON_RUN}deeper/10_profiling_and_compile]", "tests/test_browser.py",
         f"{LESSON_RUN}deeper/11_sharding_fsdp]", "tests/test_decks.py"]


def pytest_collection_modifyitems(config, items):
    seconds = {**_lesson_seconds(), **MODULE_SECONDS}
    # stable: a module's tests keep their order; FIRST, then the other units longest first
    items.sort(key=lambda item: (FIRST.index(_unit(item.nodeid)) if _unit(item.nodeid) in FIRST else len(FIRST),
                                 -seconds.get(_unit(item.nodeid), 0.0)))


def pytest_xdist_make_scheduler(config, log):
    """--dist loadfile, with each lesson's run a unit of its own (see above)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class LessonScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _unit(nodeid)

        def _reschedule(self, node) -> None:
            """xdist's, but a worker asks for its next unit only when one test is left in its queue
            (xdist: two), so a worker busy with a lesson does not also hold the next few lessons while
            the other worker runs dry. (A worker runs its last queued test only once it knows the next
            one, or that none comes: one unit must wait in its queue.)"""
            if node.shutting_down:
                return
            if not self.workqueue:
                node.shutdown()
                return
            if self._pending_of(self.assigned_work[node]) > 1:
                return
            self._assign_work_unit(node)

    return LessonScheduling(config, log)


# --- The one-screen summary `make test` ends with: per phase, passed / failed / skipped and seconds. ---
def _phase(nodeid: str, keywords) -> str:
    path = nodeid.split("::", 1)[0]
    if nodeid.startswith(LESSON_RUN):
        return "lessons (alone, wheel, stored outputs)"
    if path.startswith("notebooks/"):
        return "nbval (stored outputs)"
    name = path.rsplit("/", 1)[-1]
    named = {"test_browser.py": "browser (JupyterLab, decks)", "test_decks.py": "browser (JupyterLab, decks)",
             "test_slides_site.py": "slides and site", "test_packaging.py": "setup files, make lab, container"}
    if name in named:
        return named[name]
    return "processes and kernels" if "slow" in keywords else "unit"


_PHASES: dict[str, dict[str, float]] = {}
_STARTED = time.monotonic()


def pytest_runtest_logreport(report):
    """Every report: setup and teardown count too (a module's fresh venv or deck build is setup time).
    Under xdist the workers' reports reach the controller's hook, which writes the summary."""
    phase = dict(report.user_properties).get("course_phase")
    if phase is None:
        phase = _phase(report.nodeid, report.keywords)
        report.user_properties.append(("course_phase", phase))
    row = _PHASES.setdefault(phase, {"passed": 0, "failed": 0, "skipped": 0, "seconds": 0.0})
    row["seconds"] += report.duration
    if report.failed:  # a test counts once: its call, or the phase that stopped it
        row["failed"] += 1
    elif report.skipped:
        row["skipped"] += 1
    elif report.when == "call":
        row["passed"] += 1


def pytest_terminal_summary(terminalreporter, config):
    if not _PHASES:
        return
    tr = terminalreporter
    workers = getattr(config.option, "numprocesses", None) or 1
    total = sum(r["seconds"] for r in _PHASES.values())
    tr.write_sep("=", "course test summary (seconds: setup + test + teardown, summed over the workers)")
    tr.write_line(f"{'phase':<38}{'passed':>8}{'failed':>8}{'skipped':>9}{'seconds':>10}")
    for phase, row in sorted(_PHASES.items(), key=lambda kv: -kv[1]["seconds"]):
        tr.write_line(f"{phase:<38}{row['passed']:>8.0f}{row['failed']:>8.0f}{row['skipped']:>9.0f}{row['seconds']:>10.1f}")
    tr.write_line(f"{'all':<38}{sum(r['passed'] for r in _PHASES.values()):>8.0f}"
                  f"{sum(r['failed'] for r in _PHASES.values()):>8.0f}{sum(r['skipped'] for r in _PHASES.values()):>9.0f}{total:>10.1f}")
    tr.write_line(f"wall {time.monotonic() - _STARTED:.0f} s for pytest on {workers} worker(s)")
