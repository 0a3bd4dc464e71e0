"""The Chinese lessons (notebooks/zh/) are in step with the English cores: tools/zh.py's check passes
on the tree, and it fails, naming the lesson and the cell, on a stale translation, a missing cell and
code that differs beyond comments and strings."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
import zh  # noqa: E402  (tools/zh.py)

from course_utils.paths import core_notebooks, zh_notebooks  # noqa: E402

LESSONS = core_notebooks(REPO / "notebooks")


def test_every_core_has_its_chinese_lesson_in_step():
    assert [p.name for p in zh_notebooks(REPO / "notebooks")] == [p.name for p in LESSONS]
    found = [line for p in LESSONS for line in zh.problems(p)]
    assert not found, "python tools/zh.py check:\n" + "\n".join(found[:40])
    assert zh.main(["check"]) == 0 and zh.main(["stale"]) == 0


@pytest.fixture
def lesson(tmp_path) -> Path:
    """Lesson 02 and its translation, copied to a scratch notebooks/ folder."""
    (tmp_path / "zh").mkdir()
    en = LESSONS[2]
    shutil.copy(en, tmp_path / en.name)
    shutil.copy(REPO / "notebooks" / "zh" / en.name, tmp_path / "zh" / en.name)
    return tmp_path / en.name


def _edit(path: Path, index_of, change) -> str:
    nb = nbformat.read(path, as_version=4)
    cell = nb.cells[index_of(nb)]
    change(cell)
    nbformat.write(nb, path)
    return cell.id


def _first(kind: str, with_text: str = ""):
    return lambda nb: next(i for i, c in enumerate(nb.cells)
                           if c.cell_type == kind and with_text in c.source and c.id != "course-install")


def test_a_changed_english_cell_makes_its_translation_stale(lesson, capsys):
    assert zh.problems(lesson) == []
    cell = _edit(lesson, _first("markdown", "## 2."), lambda c: setattr(c, "source", c.source + "\n\nOne more sentence."))
    assert zh.problems(lesson) == [f"{lesson.stem} cell {cell}: stale, the English cell changed after it was translated"]
    assert [c for c, _ in zh.stale(lesson)] == [cell]
    text = zh.export(lesson, only_stale=True)
    assert text.count("<<< cell ") == 1 and ">>> One more sentence." in text, "the export shows what the English says now"


def test_a_cell_without_counterpart_is_named(lesson):
    nb = nbformat.read(lesson.parent / "zh" / lesson.name, as_version=4)
    gone = nb.cells.pop(5)
    nbformat.write(nb, lesson.parent / "zh" / lesson.name)
    assert f"{lesson.stem} cell {gone.id}: the English cell has no translation" in zh.problems(lesson)


def test_code_may_differ_only_in_comments_and_strings(lesson):
    zpath = lesson.parent / "zh" / lesson.name
    nb = nbformat.read(zpath, as_version=4)
    i = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "print(" in c.source and c.id != "course-install")
    original = nb.cells[i].source

    def with_source(src: str) -> list[str]:
        nb.cells[i].source = src
        nbformat.write(nb, zpath)
        return zh.problems(lesson)

    assert with_source("# 一条注释\n" + original) == []
    assert any("code differs" in p for p in with_source(original + '\nprint("另一句话")'))
    assert any("code differs" in p for p in with_source(original.replace("print(", "print(1, ", 1)))
    assert with_source(original) == []


def test_the_code_comparison():
    same = zh.code_difference
    assert same('x = f"took {s:.1f} s on {dev}"  # time', 'x = f"在 {dev} 上用了 {s:.1f} 秒"  # 时间') is None, "words and order of an f-string are language"
    assert same('x = f"took {s:.1f} s"', 'x = f"用了 {s:.2f} 秒"') is not None, "a format spec is code"
    assert same('x = f"took {s} s"', 'x = f"用了 {t} 秒"') is not None, "an f-string's expression is code"
    assert same('d = {"a": 1}\nprint(d["a"])', 'd = {"甲": 1}\nprint(d["甲"])') is None, "strings may differ (the run catches a key that no longer matches)"
    assert same("y = x + 1", "y = x + 2") is not None
    assert same("%timeit f()\ny = 1", "%timeit f()\ny = 1  # 注释") is None, "magics are understood"
    assert "does not parse" in same("y = 1", "y = (1")


def test_markdown_keeps_code_links_and_numbers_and_no_english_sentence():
    en = "Run `make test` on 2 cores; see the [glossary](glossary.md#kernel) and [deeper part](deeper/02_iris_cpu_vs_gpu.ipynb)."
    good = "在 2 个核上运行 `make test`；见[术语表](../glossary.md#kernel)和[深入篇](../deeper/02_iris_cpu_vs_gpu.ipynb)（英文）。"
    assert zh.markdown_problems(en, good) == []
    assert any("drops the code span" in p for p in zh.markdown_problems(en, good.replace("`make test`", "make test")))
    assert any("drops the number" in p for p in zh.markdown_problems(en, good.replace("2 个核", "两个核")))
    assert any("links differ" in p for p in zh.markdown_problems(en, good.replace("../glossary.md#kernel", "glossary.md#kernel")))
    assert any("keeps an English sentence" in p for p in zh.markdown_problems(en, good + " This sentence was left in English."))
    assert any("does not say it is English" in p for p in zh.markdown_problems(en, good.replace("（英文）", "")))
