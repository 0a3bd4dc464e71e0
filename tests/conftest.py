"""Shared fixtures: executing a notebook headless the way ``make run`` does."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Kernels started by the tests (lesson runs, nbval) inherit this: course_utils.progress shows its live
# status line only in an interactive frontend, never in outputs that are compared or stored.
os.environ.setdefault("COURSE_PROGRESS", "0")
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
    return sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))
