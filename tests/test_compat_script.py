"""tools/compat.sh and the workflow's compat job: the floor that pyproject declares is the one CI runs."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "tools" / "compat.sh"


def test_compat_script_refuses_bad_arguments_with_its_usage():
    for args in ([], ["3.11"], ["3.11", "not-a-version"]):
        proc = subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=30)
        assert proc.returncode == 2 and "usage: tools/compat.sh PYTHON TORCH" in proc.stderr, args


def test_compat_script_names_a_missing_python():
    proc = subprocess.run(["bash", str(SCRIPT), "2.1", "2.4"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and "no Python 2.1" in proc.stderr


def test_ci_runs_the_declared_floor_and_the_newest():
    floor = re.search(r'"torch>=([\d.]+)"', (REPO / "pyproject.toml").read_text()).group(1)
    wf = yaml.safe_load((REPO / ".github" / "workflows" / "ci.yml").read_text())
    combos = [(m["python"], m["torch"]) for m in wf["jobs"]["compat"]["strategy"]["matrix"]["include"]]
    assert ("3.10", floor) in combos and any(t == "latest" for _, t in combos)
    assert "tools/compat.sh" in wf["jobs"]["compat"]["steps"][-1]["run"]
    assert "compat.sh" not in (REPO / ".ci" / "run").read_text(), "multi-GB CUDA wheels: not in the local CI"
