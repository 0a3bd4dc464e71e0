"""Re-execute notebooks in place so their stored outputs are a fresh reference run (``make outputs``).

nbval later re-runs each notebook and compares every cell's output with what is stored here,
except cells tagged ``nbval-ignore-output``. Run this on a CPU machine after editing a lesson:
    python tools/store_outputs.py            # all notebooks
    python tools/store_outputs.py 02 03      # only the cores whose name starts with 02 or 03
    python tools/store_outputs.py deeper/02  # lesson 02's deeper notebook (notebooks/deeper/02_*.ipynb)
    python tools/store_outputs.py zh/02      # lesson 02 in Chinese (notebooks/zh/02_*.ipynb); zh: all twelve
With no argument: every core and deeper notebook, then the Chinese cores.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from course_utils.kernels import LocalKernelManager
from course_utils.paths import all_notebooks, zh_notebooks

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def store(path: Path, timeout: int = 1200) -> float:
    nb = nbformat.read(path, as_version=4)
    t0 = time.perf_counter()
    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}},
                   kernel_manager_class=LocalKernelManager).execute()
    for cell in nb.cells:  # keep diffs small: no per-run timing metadata
        cell.metadata.pop("execution", None)
    nb.metadata.pop("papermill", None)
    nbformat.write(nb, path)
    return time.perf_counter() - t0


def main(prefixes: list[str]) -> None:
    os.environ.pop("COURSE_LEDGER", None)  # a reference run writes no ledger
    os.environ["COURSE_PROGRESS"] = "0"  # live status lines are for JupyterLab, never stored
    for path in all_notebooks(NOTEBOOKS) + zh_notebooks(NOTEBOOKS):
        name = path.relative_to(NOTEBOOKS).as_posix()  # "02_iris….ipynb", "deeper/02_….ipynb" or "zh/02_….ipynb"
        if prefixes and not any(name.startswith(p) for p in prefixes):
            continue
        print(f"{name:<47} {store(path):6.1f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
