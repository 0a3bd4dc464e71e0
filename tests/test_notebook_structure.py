"""Fast checks of every lesson's file (no kernel): the conventions of docs/authoring.md."""
from __future__ import annotations

import re

import nbformat
import pytest

from conftest import every_notebook, lesson_notebooks

from course_utils.paths import notebook_key, zh_notebooks

CORES = lesson_notebooks()
NOTEBOOKS = every_notebook()  # cores, then notebooks/deeper/
CHINESE = zh_notebooks()  # notebooks/zh/: the cores' cells translated (tests/test_zh.py holds them to their English)
FORBIDDEN = {
    r"\.cuda\(\)": "hard-coded .cuda(): use .to(device)",
    r"torch\.cuda\.amp\.": "deprecated torch.cuda.amp: use torch.autocast / torch.amp.GradScaler('cuda')",
    r"use_reentrant\s*=\s*True": "reentrant checkpointing: use use_reentrant=False",
}


def _deeper(path) -> bool:
    return path.parent.name == "deeper"


def test_there_are_lessons():
    assert len(CORES) >= 1


@pytest.mark.parametrize("path", NOTEBOOKS, ids=notebook_key)
def test_lesson_conventions(path):
    nb = nbformat.read(path, as_version=4)
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"
    cells = nb.cells
    assert cells[0].cell_type == "markdown" and cells[0].source.startswith("# "), "first cell: '# Title'"
    markdown = "\n".join(c.source for c in cells if c.cell_type == "markdown")
    assert re.search(r"^## .*Summary", markdown, re.M | re.I), "needs a '## Summary' section"
    if _deeper(path):
        core = f"../{path.name}"
        assert core in cells[0].source, f"a deeper notebook links its core lesson ({core}) in its first cell"
        assert (path.parent.parent / path.name).exists(), f"no core lesson {path.name} for this deeper notebook"
    else:
        assert re.search(r"^## .*Exercises", markdown, re.M | re.I), "needs a '## Exercises' section"
        if not path.name.startswith("00_"):
            assert re.search(r"\*\*Previously", markdown[:6000]), "a core says what it builds on: '**Previously**'"

    code = [c for c in cells if c.cell_type == "code"]
    params = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1, "exactly one code cell tagged 'parameters'"
    assert re.search(r"^DEVICE\s*=", params[0].source, re.M) and re.search(r"^SMOKE\s*=", params[0].source, re.M)
    source = "\n".join(c.source for c in code)
    assert "course_utils" in source
    assert "pick_device(DEVICE)" in source, "the device comes from the DEVICE parameter"
    for pattern, why in FORBIDDEN.items():
        assert not re.search(pattern, source), why


@pytest.mark.parametrize("path", NOTEBOOKS + CHINESE, ids=notebook_key)
def test_stored_outputs_are_a_clean_reference_run(path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code if c.source.strip()), "run `make outputs` to store a full run"
    for i, c in enumerate(code):
        for out in c.get("outputs", []):
            assert out.output_type != "error", f"cell {i} stores an error"
            text = out.get("text", "") if out.output_type == "stream" else str(out.get("data", {}).get("text/plain", ""))
            assert not re.search(r"DeprecationWarning|FutureWarning", text), f"cell {i} stores a deprecation warning"
            assert not re.search(r"<matplotlib\.\w+\.\w+ at 0x|^\[<matplotlib", text), f"cell {i} prints a matplotlib repr"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=notebook_key)
def test_lesson_starts_teaching_on_its_first_screen_and_keeps_cells_short(path):
    """Parameters ≤ 15 lines, checked in one call in a setup cell ≤ 20 lines; no code cell over 30 lines."""
    cells = nbformat.read(path, as_version=4).cells
    code = [c for c in cells if c.cell_type == "code"]
    i = next(i for i, c in enumerate(code) if "parameters" in c.metadata.get("tags", []))
    setup = code[i + 1].source
    assert len(code[i].source.splitlines()) <= 15, "parameters cell over 15 lines"
    assert len(setup.splitlines()) <= 20, "setup cell (after the parameters) over 20 lines"
    assert setup.count("check_params(") == 1 and not re.search(r"\bcheck_(int|float|bool|choice|sizes)\(", setup), \
        "the setup cell checks the parameters in one check_params(...) call"
    long = [(n, len(c.source.splitlines())) for n, c in enumerate(code) if len(c.source.splitlines()) > 30]
    assert not long, f"code cells over 30 lines (index among code cells, lines): {long}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=notebook_key)
def test_lesson_has_the_common_shape(path):
    """Numbered sections, then this machine vs the references, a summary, and the exercises last."""
    cells = nbformat.read(path, as_version=4).cells
    headings = [line for c in cells if c.cell_type == "markdown" for line in c.source.splitlines() if line.startswith("## ")]
    assert any(re.match(r"## \d+\. ", h) for h in headings), "numbered sections: '## 1. …'"
    if _deeper(path):
        assert re.search(r"Summary", headings[-1]) or re.search(r"Summary", headings[-2]), "a deeper notebook ends with its Summary"
        return
    assert any("This machine vs the references" in h for h in headings), "a '## N. This machine vs the references' section"
    assert re.search(r"Summary", headings[-2]) and re.search(r"Exercises", headings[-1]), \
        f"the last two sections are Summary and Exercises, got {headings[-2:]}"


@pytest.mark.parametrize("path", NOTEBOOKS + CHINESE, ids=notebook_key)
def test_papermill_can_read_every_parameter(path):
    """papermill skips a parameter whose comment holds '=' (then `make run -p NAME=…` calls it unknown)."""
    from papermill.inspection import _infer_parameters

    nb = nbformat.read(path, as_version=4)
    for c in nb.cells:
        c.metadata.setdefault("tags", [])
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    names = [line.split("=")[0].strip() for line in cell.source.splitlines() if re.match(r"^[A-Z_][A-Z0-9_]*\s*=", line)]
    assert [p.name for p in _infer_parameters(nb)] == names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=notebook_key)
def test_expected_results_have_both_bounds(path):
    """A range with no upper bound cannot catch a figure that is wildly off (e.g. ms recorded as s)."""
    import json

    from conftest import REPO

    required = json.loads((REPO / "tests" / "expected" / f"{notebook_key(path)}.json").read_text())["required"]
    open_ended = [k for k, (lo, hi) in required.items() if lo is None or hi is None]
    assert not open_ended, f"give these a finite range: {open_ended}"
