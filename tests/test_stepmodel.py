"""course_utils.stepmodel: kineto chatter filtered, everything else kept; thread labels."""
from __future__ import annotations

import os
import sys

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from course_utils.stepmodel import quiet_kineto, threads_in_note, threads_label


def test_quiet_kineto_drops_profiler_chatter_only(capfd):
    with quiet_kineto():
        with profile(activities=[ProfilerActivity.CPU]):
            torch.ones(3).add_(1)
        os.write(2, b"a real warning\n")
    err = capfd.readouterr().err
    assert "USDT" not in err and "STAGE" not in err
    assert "a real warning" in err


def test_quiet_kineto_restores_stderr_after_an_error(capfd):
    with pytest.raises(RuntimeError):
        with quiet_kineto():
            raise RuntimeError("boom")
    os.write(2, b"after\n")
    sys.stderr.flush()
    assert "after" in capfd.readouterr().err


def test_threads_label():
    assert threads_label(1) == "1 CPU thread"
    assert threads_label(16) == "16 CPU threads"
    with pytest.raises(ValueError):
        threads_label(0)


def test_threads_in_note():
    assert threads_in_note("CPU, 20000 epochs, loss item() every epoch, 1 thread(s)") == 1
    assert threads_in_note("CPU, 16 threads") == 16
    assert threads_in_note("no count here") is None


def test_lesson02_outside_figures_carry_their_source():
    """Lesson 02 quotes learner timings only with the page they come from; the uncited ones stay out."""
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / "02_iris_cpu_vs_gpu.ipynb").read_text())
    text = "\n".join("".join(c["source"]) for c in nb["cells"])
    for uncited in ("4.62", "16.85", "13.08"):
        assert uncited not in text, f"{uncited} s was quoted without a source"
    assert "19.09" in text and "21.23" in text and "http://www.dtcms.com/a/400739.html" in text
    assert "turn even iris into a GPU win" not in text, "a CUDA-graph win on iris was never measured"
