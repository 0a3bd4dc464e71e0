"""course_utils.progress: a live line in a real kernel, nothing at all in headless runs."""
from __future__ import annotations

import pytest

from course_utils import progress as P


def test_plain_python_shows_nothing_and_yields_everything(monkeypatch):
    monkeypatch.delenv("COURSE_PROGRESS", raising=False)
    assert not P.enabled()  # no IPython kernel in pytest
    assert list(P.progress(range(5), "x")) == [0, 1, 2, 3, 4]
    with P.working("y"):
        pass


def test_eta_only_while_running():
    assert P._eta(0, 10, 1.0) == ""
    assert P._eta(10, 10, 1.0) == ""
    assert P._eta(5, 10, 5.0) == ", about 5 s left"
    assert P._eta(3, None, 5.0) == ""


def _run_in_kernel(code: str, progress_env: str):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    import os
    old = os.environ.get("COURSE_PROGRESS")
    os.environ["COURSE_PROGRESS"] = progress_env
    try:
        NotebookClient(nb, timeout=60, kernel_name="python3").execute()
    finally:
        os.environ["COURSE_PROGRESS"] = old if old is not None else "0"
    return nb.cells[0].outputs


@pytest.mark.slow
def test_in_a_kernel_the_line_is_blanked_and_headless_leaves_no_output():
    code = ("import time\nfrom course_utils.progress import progress, working\n"
            "for i in progress(range(3), 'step'):\n    time.sleep(0.3)\n"
            "with working('block'):\n    time.sleep(1.2)\nprint('done')")
    live = _run_in_kernel(code, "1")
    shown = [o for o in live if o.output_type == "display_data"]
    assert len(shown) == 2, live  # one line per loop/block
    assert all(o.data["text/plain"] == "" for o in shown), "the line must be blanked at the end"
    headless = _run_in_kernel(code, "0")
    assert [o.output_type for o in headless] == ["stream"] and headless[0].text == "done\n"
