"""Every lesson, executed headless at SMOKE size in strict-check mode, as a student would meet it.

One kernel per lesson runs the lesson's cells in order with ``COURSE_STRICT_CHECKS=1``. Each
exercise cell first runs as the lesson ships it (answers still ``...``) and must fail with
``ExerciseNotPassed`` (the checks bite); then its marked solution runs in the same kernel and must
pass. The cells run are exactly those of ``solutions/<lesson>.ipynb`` (``test_exercises`` checks
that file is generated from the lesson), plus the failing templates.

What each lesson must record lives in ``tests/expected/<notebook>.json``:
    {"required": {"iris.test_accuracy": [0.9, 1.0], "iris.cpu_seconds": [0, null]}}
Each key must be recorded, with a value in [low, high] (null = unbounded).
"""
from __future__ import annotations

import json
import math

import pytest

from conftest import NOTEBOOK_DIR, REPO, lesson_notebooks
from course_utils.kernels import LocalKernelManager

TIME_UNITS = {"s", "ms", "us", "ns"}


def _run_lesson_then_solutions(stem: str, ledger, monkeypatch, **parameters):
    """Execute the lesson cell by cell; return (notebook, ledger dict, keys of exercises that bit)."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    from papermill.parameterize import parameterize_notebook

    monkeypatch.setenv("COURSE_LEDGER", str(ledger))
    monkeypatch.setenv("COURSE_STRICT_CHECKS", "1")
    nb = nbformat.read(NOTEBOOK_DIR / f"{stem}.ipynb", as_version=4)
    nb.metadata.setdefault("papermill", {})  # papermill's parameterize expects what its own runs add
    for c in nb.cells:
        c.metadata.setdefault("tags", [])
    nb = parameterize_notebook(nb, parameters)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
                            kernel_manager_class=LocalKernelManager)
    bit = []
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            solution = cell.metadata.get("course", {}).get("solution")
            if solution is None:
                client.execute_cell(cell, index)
                continue
            with pytest.raises(CellExecutionError) as failed:
                client.execute_cell(cell, index)
            assert "ExerciseNotPassed" in str(failed.value), f"cell {index}: the unsolved exercise must fail its check"
            bit.append(index)
            cell.source = solution
            client.execute_cell(cell, index)
    results = json.loads(ledger.read_text()) if ledger.exists() else {}
    return nb, results, bit


@pytest.mark.slow
@pytest.mark.parametrize("path", lesson_notebooks(), ids=lambda p: p.stem)
def test_lesson_runs_headless_checks_bite_and_solutions_pass(path, tmp_path, monkeypatch):
    expected_file = REPO / "tests" / "expected" / f"{path.stem}.json"
    assert expected_file.exists(), f"{expected_file} must list the results {path.stem} records"
    required = json.loads(expected_file.read_text())["required"]
    assert required, "a lesson must record at least one result"

    nb, results, bit = _run_lesson_then_solutions(path.stem, tmp_path / "ledger.json", monkeypatch, SMOKE=True, DEVICE="auto")

    assert len(bit) >= 3, f"{path.stem}: only {len(bit)} checked exercises bit in strict mode"
    missing = sorted(set(required) - set(results))
    assert not missing, f"{path.stem} did not record {missing}"
    for key, (low, high) in required.items():
        value = results[key]["value"]
        assert (low is None or value >= low) and (high is None or value <= high), f"{key}={value} outside [{low}, {high}]"
    for key, r in results.items():
        assert math.isfinite(r["value"]), key
        if r["unit"] in TIME_UNITS:
            assert r["value"] > 0, f"{key}: a measured time must be positive, got {r['value']}"
