"""Speaker notes out of the student's notebook: into the metadata of their section's heading cell.

    python tools/notes.py [NN ...]          # migrate every notes cell (idempotent: a migrated lesson is unchanged)
    python tools/notes.py --check [NN ...]  # exit 1 if a lesson still has a notes cell

Today's format (what a lesson author writes, lesson 11 included): a markdown cell right after a
``##`` heading, with ``metadata.slideshow.slide_type == "notes"`` (or starting ``**Speaker notes**``)::

    **Speaker notes** (3 min)
    - **Say:** ...
    - **Ask the room:** "Why ...?" (the answer, if the author wrote one)
    - **Demo live:** ...

The migration, per notes cell:
- its text goes to ``metadata.course.notes`` of the nearest heading cell above it (``#``, ``##`` or
  ``###``); the slides show a section's notes on every slide of that ``##`` section, and the site's
  instructor page lists them (tools/slides.py, tools/site.py);
- the cell itself, same id, becomes a **Check yourself** cell for a student reading alone: the
  "Ask the room" question, and folded under it (``<details>``) the answer the author wrote in
  parentheses, or else the section's key points (the "Say" text). It is ``skip`` in the slides.
  In the Exercises section, and for a question about an exercise, the cell is removed instead:
  the exercises check themselves, and their answers stay in the solutions.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
LESSONS = REPO / "notebooks"
NOTES_PREFIX = "**Speaker notes**"
HEADING = re.compile(r"(#{1,3}) +(.*)")
ASK = re.compile(r"\*\*Ask the room:\*\*\s*(.*)")
SAY = re.compile(r"\*\*Say:\*\*\s*(.*)")


def is_notes_cell(cell) -> bool:
    if cell.metadata.get("slideshow", {}).get("slide_type") == "notes":
        return True
    return cell.cell_type == "markdown" and cell.source.lstrip().startswith(NOTES_PREFIX)


def heading_of(cell) -> tuple[int, str] | None:
    """``(level, title)`` of a markdown cell that starts with a heading, else None."""
    if cell.cell_type != "markdown":
        return None
    m = HEADING.match(cell.source.lstrip())
    return (len(m[1]), m[2].splitlines()[0].strip()) if m else None


def section_number(title: str) -> str:
    """``"3"`` for ``"3. Measuring ..."``, else the title itself (``"Summary"``)."""
    m = re.match(r"(\d+)\.", title)
    return m[1] if m else title


def parse_question(notes: str) -> tuple[str, str] | None:
    """The "Ask the room" question and the author's answer in parentheses after it ('' if none)."""
    m = ASK.search(notes)
    if not m:
        return None
    line = m[1].strip()
    quoted = re.match(r'"(.+)"\s*(.*)$', line)
    question, rest = (quoted[1], quoted[2]) if quoted else (line, "")
    answer = re.fullmatch(r"\((.+)\)\.?", rest.strip())
    return question.strip(), (answer[1].strip() if answer else rest.strip())


def key_points(notes: str) -> str:
    m = SAY.search(notes)
    return m[1].strip() if m else ""


def check_yourself(notes: str) -> str | None:
    """The student's version of a notes cell, or None when there is nothing to ask."""
    parsed = parse_question(notes)
    if not parsed:
        return None
    question, answer = parsed
    if re.search(r"\bexercise", question, re.I):
        return None
    if answer:
        label, body = "Answer", answer[0].upper() + answer[1:]
    else:
        label, body = "What to think about (the section's key points)", key_points(notes)
        if not body:
            return None
    return (f"**Check yourself:** {question}\n\n<details><summary>{label}</summary>\n\n{body}\n\n</details>")


def migrate(nb) -> bool:
    """Move every notes cell of ``nb`` into its heading's metadata; True if anything changed."""
    changed, keep, heading = False, [], None
    for cell in nb.cells:
        if not is_notes_cell(cell):
            if heading_of(cell):
                heading = cell
            keep.append(cell)
            continue
        changed = True
        notes = cell.source.strip()
        if heading is None:
            raise SystemExit(f"a notes cell ({notes[:40]!r}) comes before any heading: put it after its section's heading")
        course = heading.metadata.setdefault("course", {})
        course["notes"] = f"{course['notes']}\n\n{notes}" if course.get("notes") else notes
        in_exercises = heading_of(heading)[1].lower().startswith("exercises")
        student = None if in_exercises else check_yourself(notes)
        if student is None:
            continue  # the cell is dropped
        cell.source = student
        cell.metadata.pop("slideshow", None)
        cell.metadata["slideshow"] = {"slide_type": "skip"}
        cell.metadata.setdefault("course", {})["check_yourself"] = True
        keep.append(cell)
    nb.cells = keep
    return changed


def section_notes(nb) -> list[dict]:
    """Per ``##`` section (and the title): its heading, number and notes, in order."""
    sections = []
    for i, cell in enumerate(nb.cells):
        h = heading_of(cell)
        if not h:
            continue
        level, title = h
        notes = cell.metadata.get("course", {}).get("notes", "")
        if level <= 2:
            sections.append({"cell": i, "level": level, "title": title, "number": section_number(title), "notes": notes})
        elif notes and sections:
            sections[-1]["notes"] = f"{sections[-1]['notes']}\n\n{notes}".strip()
    return sections


def lessons(selected: list[str] | None = None, folder: Path | None = None) -> list[Path]:
    found = sorted((folder or LESSONS).glob("[0-9][0-9]_*.ipynb"))
    return [p for p in found if not selected or p.name[:2] in selected]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("numbers", nargs="*")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--notebooks", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    bad = 0
    for path in lessons(args.numbers, args.notebooks):
        nb = nbformat.read(path, as_version=4)
        left = sum(is_notes_cell(c) for c in nb.cells)
        if args.check:
            if left:
                print(f"{path.name}: {left} speaker-notes cells in the student's notebook (python tools/notes.py)")
                bad += 1
            continue
        if migrate(nb):
            nbformat.validate(nb)
            nbformat.write(nb, path)
            print(f"{path.name}: {left} notes cells moved into their headings' metadata")
        else:
            print(f"{path.name}: unchanged")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
