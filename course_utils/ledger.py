"""The results ledger: what a lesson measured, beside what the course measured elsewhere.

A lesson calls ``record("iris.cpu_seconds", 4.6, unit="s")`` for each figure it measures.
Interactively the values stay in memory. In a headless run (``make run``, the tests) the runner
sets ``COURSE_LEDGER`` to a JSON path and every ``record`` rewrites that file, so what a notebook
measured survives even if a later cell fails. Reference runs are kept in ``results/<machine>.json``
(``cpu-ci``, ``h200``, ...) and ``compare`` shows them beside this machine's figures.
"""
from __future__ import annotations

import json
import math
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from .atomic import atomic_write_text

ENV_VAR = "COURSE_LEDGER"
KEY = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_]+)+$")


@dataclass
class Result:
    value: float
    unit: str = ""
    note: str = ""


_recorded: dict[str, Result] = {}


def results_dir() -> Path:
    """Where the shipped reference files live: ``$COURSE_RESULTS_DIR`` or ``<repo>/results``."""
    return Path(os.environ.get("COURSE_RESULTS_DIR") or Path(__file__).resolve().parents[1] / "results")


def record(key: str, value: float, unit: str = "", note: str = "") -> float:
    """Store one measured figure under a dotted key (``lesson.what``) and return the value.

    Used by: every notebook.
    """
    if not KEY.match(key):
        raise ValueError(f"ledger keys look like 'lesson.what' (lower case, digits, '_'), got {key!r}")
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        raise TypeError(f"ledger values are numbers; got {type(value).__name__} for {key!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{key!r}: refusing to record a non-finite value ({v})")
    _recorded[key] = Result(v, unit, note)
    target = os.environ.get(ENV_VAR)
    if target:
        _write(Path(target), {k: asdict(r) for k, r in _recorded.items()})
    return v


def recorded() -> dict[str, Result]:
    """Everything recorded in this process so far (a copy)."""
    return dict(_recorded)


def clear() -> None:
    """Forget what was recorded (tests use this)."""
    _recorded.clear()


def _write(path: Path, data: dict) -> None:
    """Replace the ledger file atomically: a reader, a crash or a second process recording into the
    same file (two lessons run at once) never leaves half a JSON file behind."""
    atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True))


def available_references() -> list[str]:
    """Names of the shipped reference files, e.g. ``['cpu-ci', 'h200']``."""
    return sorted(p.stem for p in results_dir().glob("*.json"))


def load_reference(name: str) -> dict[str, Result]:
    """All results of one reference file, flattened over its notebooks. Missing file: ``{}``.

    Used by: every notebook that shows reference figures (02, 04-09).
    """
    path = results_dir() / f"{name}.json"
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    out: dict[str, Result] = {}
    for nb in data.get("notebooks", {}).values():
        for key, r in nb.get("results", {}).items():
            out[key] = Result(**r)
    return out


def reference_environment(name: str) -> dict:
    """The machine description stored with a reference file (``{}`` if absent)."""
    path = results_dir() / f"{name}.json"
    return json.loads(path.read_text()).get("environment", {}) if path.exists() else {}


def compare(keys: list[str] | None = None, references: tuple[str, ...] = ("cpu-ci", "h200")) -> str:
    """A text table: each key, its unit, this machine's value and each reference's value.

    ``keys`` defaults to everything recorded in this process. A dash means "not measured there".
    Used by: every notebook's results cell.
    """
    refs = {name: load_reference(name) for name in references}
    keys = list(keys if keys is not None else _recorded)
    header = ["result", "unit", "this machine", *references]
    rows = [header]
    for k in keys:
        mine = _recorded.get(k)
        unit = mine.unit if mine else next((r[k].unit for r in refs.values() if k in r), "")
        row = [k, unit, _fmt(mine.value) if mine else "-"]
        row += [_fmt(refs[n][k].value) if k in refs[n] else "-" for n in references]
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _fmt(v: float) -> str:
    if v == 0 or 1e-3 <= abs(v) < 1e6:
        return f"{v:.4g}"
    return f"{v:.3e}"
