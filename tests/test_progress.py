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


def _run_in_kernels(code: str, progress_envs: list[str]) -> list:
    """Run ``code`` in one fresh kernel per ``COURSE_PROGRESS`` value, all at the same time (each
    kernel's start and its sleeps overlap the others'); each kernel gets the value in the
    environment it starts with, as a headless runner gives it. Returns each kernel's outputs."""
    import asyncio
    import os

    import nbformat
    from nbclient import NotebookClient

    notebooks = [nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)]) for _ in progress_envs]

    async def run_all():
        clients = [NotebookClient(nb, timeout=60, kernel_name="python3") for nb in notebooks]
        await asyncio.gather(*(client.async_execute(env={**os.environ, "COURSE_PROGRESS": value})
                               for client, value in zip(clients, progress_envs)))

    asyncio.run(run_all())
    return [nb.cells[0].outputs for nb in notebooks]


@pytest.mark.slow
def test_in_a_kernel_the_line_is_blanked_and_headless_leaves_no_output():
    code = ("import time\nfrom course_utils.progress import progress, working\n"
            "for i in progress(range(3), 'step'):\n    time.sleep(0.3)\n"
            "with working('block'):\n    time.sleep(0.7)\nprint('done')")  # the ticker redraws at 0.5 s
    live, headless = _run_in_kernels(code, ["1", "0"])
    shown = [o for o in live if o.output_type == "display_data"]
    assert len(shown) == 2, live  # one line per loop/block
    assert all(o.data == {} for o in shown), "the line must be emptied at the end"
    assert [o.output_type for o in headless] == ["stream"] and headless[0].text == "done\n"


@pytest.mark.slow
def test_plain_nbval_passes_on_a_cell_with_a_progress_line(tmp_path):
    """nbval as its users run it (no COURSE_PROGRESS): the live line must leave no output nbval sees."""
    import os
    import subprocess
    import sys

    import nbformat

    code = ("import time\nfrom course_utils.progress import progress, working\n"
            "for i in progress(range(3), 'step'):\n    time.sleep(0.3)\n"
            "with working('block'):\n    time.sleep(0.6)\nprint('done')")
    cell = nbformat.v4.new_code_cell(code, execution_count=1,
                                     outputs=[nbformat.v4.new_output("stream", name="stdout", text="done\n")])
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), tmp_path / "live.ipynb")
    env = {k: v for k, v in os.environ.items() if k != "COURSE_PROGRESS"}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval",
                          "--nbval-current-env", "live.ipynb"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "1 passed" in run.stdout
