"""Facts that lessons 06, 07 and 08 state, guarded where code can check them (issue 9).

- No machine verdict in their markdown: the phrases that contradicted the measured outputs stay out;
  the measuring cells print the verdicts.
- No stray ``Out[]``: a code cell never ends with a bare ``record(...)`` expression.
- Strict nbval stays stable across machines and torch versions: cells compared by nbval print no
  byte counts of torch's serialiser and no torch version.
- The start-method defaults lesson 08 (and course_utils.datasets) teach match this Python.
- bf16's precision as the lesson states it (8 significant bits, about 2.4 decimal digits).
"""
from __future__ import annotations

import ast
import math
import re
import subprocess
import sys

import nbformat
import pytest
import torch

from conftest import REPO

LESSONS = {n: next((REPO / "notebooks").glob(f"{n}_*.ipynb")) for n in ("06", "07", "08")}
IGNORE = "nbval-ignore-output"


def _nb(n):
    """Lesson n's core, with its deeper notebook's cells after it (issue 33 moved depth there)."""
    nb = nbformat.read(LESSONS[n], as_version=4)
    deeper = REPO / "notebooks" / "deeper" / LESSONS[n].name
    if deeper.exists():
        nb.cells += nbformat.read(deeper, as_version=4).cells
    return nb


def _markdown(n):
    return "\n".join(c.source for c in _nb(n).cells if c.cell_type == "markdown")


# Sentences that stated a verdict about "this machine" (or a wrong fact) and were contradicted by the outputs.
RETIRED = {
    "06": [r"the casts dominate", r"the claim mostly fails", r"between 50 ?% and 100 ?%", r"fp32 list is shorter",
           r"about 3 significant digits", r"~3 significant digits"],
    "08": [r"one worker gets most of the gain", r"one training thread and one worker already fill it",
           r"In training mode", r"`forkserver` \(the default on macOS and Windows\)"],
}


@pytest.mark.parametrize("n", sorted(RETIRED))
def test_markdown_states_no_retired_verdict(n):
    text = _markdown(n)
    found = [p for p in RETIRED[n] if re.search(p, text, re.I)]
    assert not found, f"lesson {n} markdown states {found}: print verdicts from the numbers instead"


def _ends_with_bare_record(source: str) -> bool:
    try:
        body = ast.parse(source).body
    except SyntaxError:  # IPython magics: not our cells
        return False
    last = body[-1] if body else None
    return (isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)
            and getattr(last.value.func, "id", getattr(last.value.func, "attr", "")) == "record")


def test_the_detector_sees_a_bare_record():
    assert _ends_with_bare_record('x = 1\nrecord("a.b", x)') and not _ends_with_bare_record('v = record("a.b", 1)')


@pytest.mark.parametrize("n", sorted(LESSONS))
def test_no_cell_ends_with_a_bare_record(n):
    bad = [i for i, c in enumerate(_nb(n).cells) if c.cell_type == "code" and _ends_with_bare_record(c.source)]
    assert not bad, f"lesson {n}: cells {bad} end with a bare record(...): its value shows as a stray Out[]"


@pytest.mark.parametrize("n", sorted(LESSONS))
def test_compared_outputs_hold_no_byte_counts_or_versions(n):
    version = re.escape(torch.__version__.split("+")[0])
    for i, c in enumerate(_nb(n).cells):
        if c.cell_type != "code" or IGNORE in c.metadata.get("tags", []):
            continue
        text = "".join(o.get("text", "") for o in c.get("outputs", []) if o.output_type == "stream")
        assert not re.search(r"\(\d+ bytes\)", text), f"lesson {n} cell {i}: a serialiser byte count is compared by nbval"
        assert not re.search(version, text), f"lesson {n} cell {i}: the torch version is compared by nbval"


def test_start_method_defaults_are_what_lesson_08_says():
    """spawn on macOS and Windows; on Linux fork up to Python 3.13, forkserver from 3.14."""
    out = subprocess.run([sys.executable, "-c", "import multiprocessing as mp; print(mp.get_start_method())"],
                         capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    if sys.platform in ("darwin", "win32"):
        expected = "spawn"
    else:
        expected = "forkserver" if sys.version_info >= (3, 14) else "fork"
    assert out == expected
    text = " ".join(_markdown("08").split())
    assert "`spawn` (the default on macOS and Windows)" in text
    assert "(the default on Linux from Python 3.14)" in text


def test_bf16_precision_as_lesson_06_states_it():
    bits = 1 - math.log2(torch.finfo(torch.bfloat16).eps)  # stored mantissa bits + the implicit 1
    assert bits == 8
    assert f"{bits * math.log10(2):.1f}" == "2.4"
    text = " ".join(_markdown("06").split())
    assert "8 significant bits" in text and "2.4 decimal digits" in text
