"""Every slide of every deck, measured in real Chromium at 1280x720 (tools/measure_slides.py).

Builds all decks into a temp folder from the npm-installed assets (build/web, `make slides` installs
them), opens each in one page and steps through its slides with Reveal's API: no slide taller than
the screen, no code/output/table block clipped sideways, prose >= 24 px and code >= 18 px on screen,
speaker notes on every slide, a 16:9 canvas, and ArrowRight / PageDown (a clicker) visit every slide.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
import measure_slides  # noqa: E402
import slides  # noqa: E402

pytestmark = pytest.mark.slow


def _ready():
    if not measure_slides.CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{measure_slides.CHROMIUM} not found (CI is set: .ci/run must install it)")
        pytest.skip(f"{measure_slides.CHROMIUM} not found: install Debian's chromium")
    pytest.importorskip("playwright")
    if not (slides.NODE_MODULES / "reveal.js").exists():
        if shutil.which("npm") is None or shutil.which("make") is None:
            pytest.skip("needs npm (or build/web/node_modules from `make slides`)")
        subprocess.run(["make", "build/web/node_modules/.package-lock.json"], cwd=REPO, check=True)


def _table_lesson(folder: Path) -> Path:
    """A lesson whose results are course_utils.tables tables, a wide log line and a long log."""
    from course_utils.tables import Table

    wide = Table([f"column {i} (unit)" for i in range(9)], [[i * 1.2345, "T4", 15.0, 80, None, "yes", 1e-7, 3, 12_345_678]
                                                              for i in range(12)], title="Will it fit?", note="a note")
    nb = nbformat.v4.new_notebook()
    code = nbformat.v4.new_code_cell("show_table(...)")
    code.outputs = [nbformat.v4.new_output("display_data", data={"text/html": wide._repr_html_(), "text/plain": str(wide)})]
    log = nbformat.v4.new_code_cell("train()")
    log.outputs = [nbformat.v4.new_output("stream", name="stdout", text="".join(f"epoch {i} loss 0.1\n" for i in range(80)))]
    wide_line = nbformat.v4.new_code_cell("print(x)")
    wide_line.outputs = [nbformat.v4.new_output("stream", name="stdout", text="x" * 400 + "\n")]
    nb.cells = [nbformat.v4.new_markdown_cell("# 99 · Tables\n\nintro"),
                nbformat.v4.new_markdown_cell("## 1. A table"), code, log, wide_line,
                nbformat.v4.new_markdown_cell("**Speaker notes** (2 min)\n\n- **Say:** read the table.")]
    nb.cells[-1].metadata["slideshow"] = {"slide_type": "notes"}
    nb.cells.insert(2, nb.cells.pop())  # the notes right after their heading
    for _ in range(5):
        nb.cells.append(nbformat.v4.new_markdown_cell("more prose " * 10))
    path = folder / "99_tables.ipynb"
    nbformat.write(nb, path)
    return path


def _problems(results: list[dict]) -> dict:
    bad = {}
    for r in results:
        w, h = r["canvas"]
        issues = {k: r[k][:5] for k in ("tall", "clipped", "small", "no_notes") if r[k]}
        if abs(w / h - 16 / 9) > 0.01:
            issues["canvas"] = f"{w}x{h} is not 16:9"
        for key in ("arrow_right_reaches", "page_down_reaches"):
            if r[key] != r["slides"]:
                issues[key] = f"{r[key]} of {r['slides']} slides"
        if issues:
            issues["detail"] = dict(list(r["detail"].items())[:3])
            bad[r["deck"]] = issues
    return bad


def test_every_slide_of_every_deck_fits_a_1280x720_projector(tmp_path):
    _ready()
    decks = slides.build(None, tmp_path)
    decks.append(slides.export(_table_lesson(tmp_path), tmp_path / "99_tables.slides.html", "slides", "assets"))
    results = measure_slides.measure(decks)
    print("\n" + measure_slides.table(results))
    assert len(results) == len(slides.lessons()) + 1
    assert all(r["slides"] >= slides.MIN_SLIDES for r in results[:-1])
    assert not _problems(results), _problems(results)


def test_the_measurement_catches_a_slide_that_does_not_fit(tmp_path):
    """A negative control: a hand choice that shows a 60-line cell whole, tiny text, an unwrapped line."""
    _ready()
    nb = nbformat.v4.new_notebook()
    tall = nbformat.v4.new_code_cell("\n".join(f"x{i} = {i}" for i in range(60)))
    tall.metadata["course"] = {"deck": {"show": "all", "by": "hand"}}
    nb.cells = [nbformat.v4.new_markdown_cell("# 98 · Bad\n\nintro"), nbformat.v4.new_markdown_cell("## 1. Bad"),
                tall, nbformat.v4.new_markdown_cell('<span style="font-size:12px">tiny</span>'),
                nbformat.v4.new_markdown_cell('<pre style="white-space:pre">' + "w" * 300 + "</pre>")]
    for i, cell in enumerate(nb.cells):
        cell.metadata["slideshow"] = {"slide_type": ["slide", "slide", "-", "subslide", "subslide"][i]}
    nbformat.write(nb, tmp_path / "98_bad.ipynb")
    slides.copy_assets(tmp_path / "assets")
    deck = slides.export(tmp_path / "98_bad.ipynb", tmp_path / "98_bad.slides.html", "slides", "assets")
    [r] = measure_slides.measure([deck])
    assert r["tall"] == ["1/0"] and r["small"] == ["1/1"] and r["clipped"] == ["1/2"], r
    assert r["no_notes"] == ["1/0", "1/1", "1/2"], "a section without notes has none (the title: the lesson plan)"
