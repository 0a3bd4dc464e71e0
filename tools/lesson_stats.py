"""How long a lesson is for the student who reads it: words, figures, words before the first output.

The counts are the ones the course holds itself to (tests/test_lesson_stats.py):
- **words**: markdown prose the student reads, i.e. every markdown cell with its ``<details>`` blocks
  (folded answers) removed, split on white space. Headings count; code cells do not.
- **before first output**: the words of markdown cells above the first code cell that shows an output.
- **figures**: stored ``image/png`` / ``image/svg+xml`` outputs plus images in markdown (``![..](..)``,
  ``<img``, inline ``<svg``).

- **minutes**: a student's time for the notebook: prose at ``READING_WPM`` words a minute (a careful
  reader of technical English as a second language), code at ``CODE_LINES_PER_MIN`` lines a minute,
  ``EXERCISE_MIN`` minutes per checked exercise, plus the notebook's run time in the CPU reference
  card (``results/cpu-ci.json``). The tracks in README.md and docs/teaching.md are built from these.

    python tools/lesson_stats.py            # a table of every core and deeper notebook
    python tools/lesson_stats.py 02 03      # only those whose name starts with 02 or 03
    python tools/lesson_stats.py --tracks [--write]   # the tracks table in README.md and docs/teaching.md
"""
from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path
from typing import NamedTuple

import nbformat

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from course_utils.paths import core_notebooks, deeper_notebooks, notebook_key  # noqa: E402

DETAILS = re.compile(r"<details\b.*?</details>", re.S | re.I)
MD_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]+\)|<img\b|<svg\b", re.I)
IMAGE_MIMES = ("image/png", "image/svg+xml", "image/jpeg")

CORE_WORDS = 2000
COURSE_WORDS = 20000
WORDS_BEFORE_OUTPUT = 400
READING_WPM = 120
CODE_LINES_PER_MIN = 10
EXERCISE_MIN = 5
CARD = REPO / "results" / "cpu-ci.json"


class Stats(NamedTuple):
    name: str
    words: int
    figures: int
    before_output: int
    code_lines: int = 0
    exercises: int = 0


def prose(markdown: str) -> str:
    """The text a student reads of one markdown cell: folded answers removed, inline images dropped."""
    text = DETAILS.sub(" ", markdown)
    text = re.sub(r"<svg\b.*?</svg>", " ", text, flags=re.S | re.I)
    text = re.sub(r"!\[[^\]]*\]\((?:data:[^)]*|[^)]*)\)", " ", text)
    return text


def words(markdown: str) -> int:
    return len(prose(markdown).split())


def stats(path: Path) -> Stats:
    nb = nbformat.read(path, as_version=4)
    total = figures = code = exercises = 0
    before = None
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            total += words(cell.source)
            figures += len(MD_IMAGE.findall(cell.source))
        elif cell.cell_type == "code":
            if cell.get("id") != "course-install":  # hidden plumbing: not read
                code += sum(1 for line in cell.source.splitlines() if line.strip())
            exercises += "solution" in cell.metadata.get("course", {})
            outs = cell.get("outputs", [])
            figures += sum(1 for o in outs if any(m in o.get("data", {}) for m in IMAGE_MIMES))
            if before is None and outs:
                before = total
    return Stats(path.stem, total, figures, total if before is None else before, code, exercises)


def run_seconds() -> dict[str, float]:
    """Each notebook's default run in the CPU reference card, by ``notebook_key``."""
    try:
        return {k: float(v["seconds"]) for k, v in json.loads(CARD.read_text())["notebooks"].items()}
    except (OSError, ValueError, KeyError):
        return {}


def minutes(path: Path, seconds: dict[str, float] | None = None) -> int:
    """A student's minutes for one notebook (see the module's docstring), rounded up."""
    s = stats(path)
    run = (seconds if seconds is not None else run_seconds()).get(notebook_key(path), 0.0)
    return math.ceil(s.words / READING_WPM + s.code_lines / CODE_LINES_PER_MIN + s.exercises * EXERCISE_MIN + run / 60)


# The one-day track: the question the course was written for (why is the GPU slower?), answered and
# measured, on the machine the student has. The full course: every core; the deeper notebooks are extra.
ONE_DAY = ("00", "01", "02")
TRACK_START, TRACK_END = "<!-- tracks: tools/lesson_stats.py --tracks --write -->", "<!-- /tracks -->"
TRACK_FILES = (REPO / "README.md", REPO / "docs" / "teaching.md")


def title(path: Path) -> str:
    """The lesson's title, as its first line says it ("# 02 · Iris on CPU vs GPU: why ..." -> "Iris on CPU vs GPU")."""
    first = nbformat.read(path, as_version=4).cells[0].source.splitlines()[0]
    return re.split(r":| — | - ", first.split("·", 1)[-1].strip(), maxsplit=1)[0].strip()


def tracks_table() -> str:
    """The tracks as a markdown table: each core's minutes, the deeper notebook's, and each track's sum."""
    seconds = run_seconds()
    deeper = {p.name[:2]: p for p in deeper_notebooks()}
    rows, day = [], 0
    lines = [f"Minutes for a student: prose read at {READING_WPM} words a minute (a careful reader of technical "
             f"English as a second language), code at {CODE_LINES_PER_MIN} lines a minute, {EXERCISE_MIN} minutes "
             "per exercise, plus the notebook's run on the course's reference CPU (`results/cpu-ci.json`).", "",
             "| lesson | core (min) | one-day track | deeper (min) |", "|---|---:|:---:|---:|"]
    full = extra = 0
    for core in core_notebooks():
        nn, m = core.name[:2], minutes(core, seconds)
        d = minutes(deeper[nn], seconds) if nn in deeper else 0
        full, extra = full + m, extra + d
        day += m if nn in ONE_DAY else 0
        rows.append(f"| {nn} · [{title(core)}](notebooks/{core.name}) | {m} | "
                    f"{'✓' if nn in ONE_DAY else ''} | {d or '-'} |")
    lines += rows
    lines += [f"| **total** | **{full}** ({full / 60:.1f} h) | **{day}** ({day / 60:.1f} h) | {extra} ({extra / 60:.1f} h) |"]
    return "\n".join(lines)


def write_tracks(write: bool) -> int:
    """Put :func:`tracks_table` between the markers of each file in TRACK_FILES; 1 if one is stale."""
    stale = 0
    for path in TRACK_FILES:
        text = path.read_text(encoding="utf-8")
        if TRACK_START not in text:
            print(f"{path.relative_to(REPO)}: no tracks marker {TRACK_START}")
            stale = 1
            continue
        head, rest = text.split(TRACK_START, 1)
        _, tail = rest.split(TRACK_END, 1)
        table = tracks_table()
        if path.parent.name == "docs":
            table = table.replace("](notebooks/", "](../notebooks/")
        new = f"{head}{TRACK_START}\n{table}\n{TRACK_END}{tail}"
        if new != text:
            stale = 1
            if write:
                path.write_text(new, encoding="utf-8")
            print(f"{path.relative_to(REPO)}: {'rewritten' if write else 'out of date (run with --tracks --write)'}")
    return 0 if write else stale


def main(prefixes: list[str]) -> int:
    if "--tracks" in prefixes:
        return write_tracks("--write" in prefixes)
    rows = [(kind, stats(p), p) for kind, paths in (("core", core_notebooks()), ("deeper", deeper_notebooks()))
            for p in paths if not prefixes or any(p.name.startswith(x) for x in prefixes)]
    seconds = run_seconds()
    print(f"{'kind':<7}{'notebook':<36}{'words':>7}{'figures':>9}{'before 1st output':>19}{'code':>6}{'ex':>4}{'minutes':>9}")
    for kind, s, p in rows:
        flag = " !" if kind == "core" and (s.words > CORE_WORDS or s.before_output > WORDS_BEFORE_OUTPUT
                                          or s.figures < 1) else ""
        print(f"{kind:<7}{s.name:<36}{s.words:>7}{s.figures:>9}{s.before_output:>19}{s.code_lines:>6}{s.exercises:>4}"
              f"{minutes(p, seconds):>9}{flag}")
    cores = [s for kind, s, _ in rows if kind == "core"]
    print(f"cores: {sum(s.words for s in cores)} words (limit {COURSE_WORDS}), {sum(s.figures for s in cores)} figures")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
