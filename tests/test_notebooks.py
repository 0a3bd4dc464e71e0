"""Every lesson, executed headless by papermill at SMOKE size, must run and record sane results.

What each lesson must record lives in ``tests/expected/<notebook>.json``:
    {"required": {"iris.test_accuracy": [0.9, 1.0], "iris.cpu_seconds": [0, null]}}
Each key must be recorded, with a value in [low, high] (null = unbounded).
"""
from __future__ import annotations

import json
import math

import pytest

from conftest import REPO, lesson_notebooks

TIME_UNITS = {"s", "ms", "us", "ns"}


@pytest.mark.parametrize("path", lesson_notebooks(), ids=lambda p: p.stem)
def test_lesson_runs_headless_and_records_results(path, run_notebook):
    expected_file = REPO / "tests" / "expected" / f"{path.stem}.json"
    assert expected_file.exists(), f"{expected_file} must list the results {path.stem} records"
    required = json.loads(expected_file.read_text())["required"]
    assert required, "a lesson must record at least one result"

    nb, results = run_notebook(path.stem, SMOKE=True, DEVICE="auto")

    missing = sorted(set(required) - set(results))
    assert not missing, f"{path.stem} did not record {missing}"
    for key, (low, high) in required.items():
        value = results[key]["value"]
        assert (low is None or value >= low) and (high is None or value <= high), f"{key}={value} outside [{low}, {high}]"
    for key, r in results.items():
        assert math.isfinite(r["value"]), key
        if r["unit"] in TIME_UNITS:
            assert r["value"] > 0, f"{key}: a measured time must be positive, got {r['value']}"
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
