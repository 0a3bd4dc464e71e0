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


# One Chinese term per concept (notebooks/glossary.md): renderings a translator might reach for, and the
# glossary's term to use instead. A variant found here is a second name for the concept.
VARIANTS = {"批次": "小批量 (batch)", "热身": "预热 (warm-up)", "自动求导": "自动微分 (autograd)",
            "纪元": "迭代周期 (epoch)", "秩": "rank · 进程编号", "固定内存": "锁页内存 (pinned memory)",
            "页锁定内存": "锁页内存 (pinned memory)", "工作线程": "工作进程 (a DataLoader worker is a process)",
            "显卡内存": "显存 (VRAM)", "视频内存": "显存 (VRAM)", "核函数启动": "内核启动 (kernel launch)",
            "同步化": "同步 (sync)", "吞吐率": "吞吐量 (throughput)", "分析器": "性能分析器 (profiler)"}


def _chinese_texts():
    for path in zh_notebooks(REPO / "notebooks"):
        for cell in nbformat.read(path, as_version=4).cells:
            yield f"{path.stem} cell {cell.id}", cell.source
    for path in sorted((REPO / "notebooks" / "zh" / "decks").glob("*.yaml")):
        yield path.name, path.read_text(encoding="utf-8")
    for path in sorted((REPO / "course_utils" / "locale" / "zh").glob("*.py")):
        yield path.name, path.read_text(encoding="utf-8")


def test_the_chinese_uses_the_glossarys_term_for_each_concept():
    glossary = (REPO / "notebooks" / "glossary.md").read_text(encoding="utf-8")
    for variant, term in VARIANTS.items():
        assert variant not in glossary or variant in term, f"the glossary itself says {variant}"
    found = [f"{where}: {variant!r}, the glossary says {term}" for where, text in _chinese_texts()
             for variant, term in VARIANTS.items() if variant in text.replace("性能分析器", "")]
    assert not found, "\n".join(found[:20])


def test_stored_outputs_that_are_not_the_english_run_are_named(lesson):
    """A Chinese lesson stored from another run than its English lesson: a number gone from a compared cell,
    or a figure missing."""
    assert zh.output_problems(lesson) == []
    zpath = lesson.parent / "zh" / lesson.name
    nb = nbformat.read(zpath, as_version=4)
    english = {c.id: c for c in nbformat.read(lesson, as_version=4).cells}
    compared = next(c for c in nb.cells if c.cell_type == "code" and c.outputs and c.id != "course-install"
                    and "nbval-ignore-output" not in english[c.id].metadata.get("tags", [])
                    and any(o.output_type == "stream" and any(ch.isdigit() for ch in o.text) for o in c.outputs))
    stream = next(o for o in compared.outputs if o.output_type == "stream" and any(ch.isdigit() for ch in o.text))
    stream.text = "".join("9" if ch.isdigit() else ch for ch in stream.text)  # every digit changed
    figure = next(c for c in nb.cells if any("image/png" in o.get("data", {}) for o in c.get("outputs", [])))
    figure.outputs = [o for o in figure.outputs if "image/png" not in o.get("data", {})]
    nbformat.write(nb, zpath)
    found = zh.output_problems(lesson)
    assert any(f"cell {compared.id}: its stored outputs lack numbers" in p for p in found), found
    assert any(f"cell {figure.id}: its stored outputs are" in p for p in found), found
