"""Where lessons write files (checkpoints, figures, scripts' output): never into notebooks/."""
from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def scratch_dir(lesson: str) -> Path:
    """A folder for one lesson's files: ``$COURSE_SCRATCH/<lesson>`` or ``<repo>/build/scratch/<lesson>``.

    Created if missing; safe to delete at any time. Used by: notebooks 05, 06, 07, 09, 10, 11.
    """
    root = Path(os.environ.get("COURSE_SCRATCH") or REPO / "build" / "scratch")
    path = root / lesson
    path.mkdir(parents=True, exist_ok=True)
    return path
