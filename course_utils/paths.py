"""Where lessons read and write files, in a checkout of the course and in an installed wheel alike.

A lesson opened alone (Colab, Kaggle, a lab server: only the ``.ipynb``, with ``course_utils``
installed from a wheel or git) has no repository around it, so nothing here may assume one:

- :func:`checkout` is the course repository when ``course_utils`` is imported from one, else ``None``;
- :func:`scratch_dir` is a folder the lesson can write to wherever the notebook runs;
- the results cards are found by :func:`course_utils.ledger.results_dir`.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

# The folder above course_utils/: the repository in a checkout, site-packages in an installed wheel.
REPO = Path(__file__).resolve().parents[1]


def checkout() -> Path | None:
    """The course repository this ``course_utils`` belongs to, or ``None`` for an installed wheel.

    A checkout is recognised by its ``pyproject.toml`` and ``notebooks/`` beside the package.
    """
    return REPO if (REPO / "pyproject.toml").is_file() and (REPO / "notebooks").is_dir() else None


def _writable(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
        return True
    except OSError:
        return False


def scratch_root() -> Path:
    """The first writable of: ``$COURSE_SCRATCH``; a checkout's ``build/scratch``; ``course_scratch/``
    in the current folder (where Jupyter starts a kernel: the notebook's folder, e.g. ``/content`` on
    Colab, ``/kaggle/working`` on Kaggle); a per-user folder in the system's temporary directory.

    ``$COURSE_SCRATCH``, when set, is used even if it must first be created, and an unwritable one is
    an error (it was asked for); the others are tried in order.
    """
    if os.environ.get("COURSE_SCRATCH"):
        return Path(os.environ["COURSE_SCRATCH"])
    repo = checkout()
    user = str(os.getuid()) if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")
    candidates = [repo / "build" / "scratch"] if repo else []
    candidates += [Path.cwd() / "course_scratch", Path(tempfile.gettempdir()) / f"course_scratch-{user}"]
    return next((c for c in candidates if _writable(c)), candidates[-1])


def scratch_dir(lesson: str) -> Path:
    """A folder for one lesson's files, ``scratch_root() / lesson`` (see :func:`scratch_root`).

    Created if missing; safe to delete at any time. Used by: notebooks 05, 06, 07, 09, 10, 11.
    """
    path = scratch_root() / lesson
    path.mkdir(parents=True, exist_ok=True)
    return path


def notebooks_dir() -> Path:
    """``notebooks/`` of the checkout (the lessons are not in the wheel: a lesson opened alone is one file)."""
    return REPO / "notebooks"


def core_notebooks(folder: Path | None = None) -> list[Path]:
    """The numbered core lessons, ``notebooks/NN_*.ipynb``, in course order."""
    return sorted((folder or notebooks_dir()).glob("[0-9][0-9]_*.ipynb"))


def deeper_notebooks(folder: Path | None = None) -> list[Path]:
    """Each lesson's deeper part, ``notebooks/deeper/NN_*.ipynb``: what a core links to for the
    method behind its numbers. Run, stored and tested like a core lesson."""
    return sorted(((folder or notebooks_dir()) / "deeper").glob("[0-9][0-9]_*.ipynb"))


def zh_notebooks(folder: Path | None = None) -> list[Path]:
    """The Chinese cores, ``notebooks/zh/NN_*.ipynb``: each an English core's cells translated
    (``tools/zh.py`` keeps them in step). Deeper notebooks stay English."""
    return sorted(((folder or notebooks_dir()) / "zh").glob("[0-9][0-9]_*.ipynb"))


def all_notebooks(folder: Path | None = None) -> list[Path]:
    """Cores then deeper notebooks: everything ``make run``, ``make outputs`` and ``make test`` execute."""
    return core_notebooks(folder) + deeper_notebooks(folder)


def notebook_key(path: Path) -> str:
    """How a notebook is named in summaries, results cards and run folders: ``02_iris_cpu_vs_gpu`` for
    a core, ``deeper/02_iris_cpu_vs_gpu`` for its deeper part, ``zh/02_iris_cpu_vs_gpu`` for its Chinese
    translation (all three share a file name)."""
    return f"{path.parent.name}/{path.stem}" if path.parent.name in ("deeper", "zh") else path.stem
