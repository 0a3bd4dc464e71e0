"""Speaker notes live in their section heading's metadata (tools/notes.py), not in the student's notebook."""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
import notes  # noqa: E402
import slides  # noqa: E402

SAY = "**Speaker notes** (4 min)\n\n- **Say:** Sharding splits the parameters.\n"


def _lesson_in_todays_format():
    """How lesson 11 (or any new lesson) is written: a notes cell after each ## heading."""
    nb = nbformat.v4.new_notebook()
    cells = [
        nbformat.v4.new_markdown_cell("# 11 · Sharding with FSDP\n\nintro"),
        nbformat.v4.new_markdown_cell("## 1. What FSDP shards\ntext"),
        nbformat.v4.new_markdown_cell(SAY + '- **Ask the room:** "Which state is sharded?" (Parameters, gradients, optimizer state.)\n- **Time:** 4 min'),
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_markdown_cell("### A detail"),
        nbformat.v4.new_markdown_cell("**Speaker notes** (1 min)\n\n- **Say:** the detail.\n- **Ask the room:** \"Why?\""),
        nbformat.v4.new_markdown_cell("## Exercises"),
        nbformat.v4.new_markdown_cell("**Speaker notes** (9 min)\n\n- **Say:** the answer to 1 is 42.\n- **Ask the room:** \"What is 6 x 7?\" (42.)"),
    ]
    for c in cells[2::3] + [cells[7]]:
        c.metadata["slideshow"] = {"slide_type": "notes"}
    cells[2].metadata["tags"] = ["keep-me"]
    nb.cells = cells
    return nb


def test_migration_moves_notes_into_the_heading_and_leaves_a_check_yourself_cell():
    nb = _lesson_in_todays_format()
    ids = [c.id for c in nb.cells]
    assert notes.migrate(nb)
    assert not any(notes.is_notes_cell(c) for c in nb.cells)
    assert [c.id for c in nb.cells] == [ids[i] for i in (0, 1, 2, 3, 4, 5, 6)], "ids kept; the exercises' notes cell goes"
    assert nb.cells[1].metadata["course"]["notes"].startswith("**Speaker notes** (4 min)")
    assert nb.cells[6].metadata["course"]["notes"].endswith('(42.)'), "exercise notes kept for the instructor"
    check = nb.cells[2]
    assert check.source == ("**Check yourself:** Which state is sharded?\n\n<details><summary>Answer</summary>\n\n"
                            "Parameters, gradients, optimizer state.\n\n</details>")
    assert check.metadata["slideshow"] == {"slide_type": "skip"} and check.metadata["tags"] == ["keep-me"]
    # No answer written: the section's key points are what is folded.
    assert "<summary>What to think about (the section's key points)</summary>\n\nthe detail." in nb.cells[5].source
    assert "42" not in "".join(c.source for c in nb.cells), "no student-visible text gives an exercise's answer"
    nbformat.validate(nb)
    before = nbformat.writes(nb)
    assert not notes.migrate(nb) and nbformat.writes(nb) == before, "a migrated lesson is unchanged"


def test_section_notes_gather_sub_headings():
    nb = _lesson_in_todays_format()
    notes.migrate(nb)
    secs = notes.section_notes(nb)
    assert [s["number"] for s in secs] == ["11 · Sharding with FSDP", "1", "Exercises"]
    assert "the detail." in secs[1]["notes"] and "Sharding splits" in secs[1]["notes"]


def test_a_notes_cell_before_any_heading_is_refused():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(SAY)]
    try:
        notes.migrate(nb)
    except SystemExit as e:
        assert "comes before any heading" in str(e)
    else:
        raise AssertionError("a notes cell with no section must be an error")


def test_no_lesson_shows_speaker_notes_to_the_student():
    """Fix with `python tools/notes.py` (then `python tools/slides.py --write-metadata`)."""
    for path in slides.lessons():
        nb = nbformat.read(path, as_version=4)
        assert not [c.id for c in nb.cells if notes.is_notes_cell(c)], f"{path.name}: notes cells left"
        sections = [s for s in notes.section_notes(nb) if s["level"] == 2]
        assert sections and all(s["notes"] for s in sections), \
            f"{path.name}: sections without notes: {[s['title'] for s in sections if not s['notes']]}"
        for cell in nb.cells:
            if cell.metadata.get("course", {}).get("check_yourself"):
                assert cell.source.startswith("**Check yourself:**") and "</details>" in cell.source, path.name
