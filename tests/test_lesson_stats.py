"""A course a student can finish: each core is short, starts with its story and shows pictures.

The counts are tools/lesson_stats.py's (prose outside folded answers; stored images and images in
markdown): every core at most 2,000 words and 400 words before its first output, with at least one
figure; all cores together at most 20,000 words and 30 figures or more."""
from __future__ import annotations

import sys

import pytest

from conftest import REPO, lesson_notebooks

sys.path.insert(0, str(REPO / "tools"))
import lesson_stats  # noqa: E402

CORES = lesson_notebooks()


def test_the_counts_follow_their_definition():
    md = "## 1. Two words\n\n<details><summary>Answer</summary>\n\nnot counted at all\n</details>\n![a figure](data:image/png;base64,AAAA)"
    assert lesson_stats.words(md) == 4  # "##", "1.", "Two", "words"
    assert len(lesson_stats.MD_IMAGE.findall(md)) == 1


@pytest.mark.parametrize("path", CORES, ids=lambda p: p.stem)
def test_a_core_is_short_starts_with_its_story_and_has_a_figure(path):
    s = lesson_stats.stats(path)
    assert s.words <= lesson_stats.CORE_WORDS, f"{s.words} words of prose (at most {lesson_stats.CORE_WORDS})"
    assert s.before_output <= lesson_stats.WORDS_BEFORE_OUTPUT, \
        f"{s.before_output} words before the first output (at most {lesson_stats.WORDS_BEFORE_OUTPUT})"
    assert s.figures >= 1, "a core shows at least one figure"


def test_the_whole_course_fits_a_student():
    stats = [lesson_stats.stats(p) for p in CORES]
    assert sum(s.words for s in stats) <= lesson_stats.COURSE_WORDS
    assert sum(s.figures for s in stats) >= 30, f"{sum(s.figures for s in stats)} figures in the cores"


def test_the_tracks_in_readme_and_teaching_are_todays(capsys):
    """README.md and docs/teaching.md carry the tracks table lesson_stats computes from the lessons and the
    CPU reference card; a lesson or the card that changed makes it stale."""
    assert lesson_stats.write_tracks(write=False) == 0, capsys.readouterr().out
