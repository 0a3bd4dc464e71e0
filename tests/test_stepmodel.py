"""course_utils.stepmodel: kineto chatter filtered, everything else kept; thread labels. Also lesson 02's exercise judges."""
from __future__ import annotations

import os
import sys

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from course_utils.profiling import quiet_kineto
from course_utils.stepmodel import threads_in_note, threads_label


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


# --- lesson 02's exercise judges (course_utils/exercises/lesson02.py) -----------------------------

def _keep_on_device(model, X, y, opt, loss_fn, epochs, every):
    kept = torch.empty(epochs)
    for epoch in range(epochs):
        loss = loss_fn(model(X), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        kept[epoch] = loss.detach()
    return kept[::every].tolist()          # one read at the end: no .item() at all


def _steps_only_when_reading(model, X, y, opt, loss_fn, epochs, every):
    losses = []
    for epoch in range(0, epochs, every):  # trains 1/every of the epochs: a different model
        loss = loss_fn(model(X), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_read_every_accepts_a_single_read_and_rejects_skipped_steps():
    from course_utils.exercises import Verdict, evaluate

    assert evaluate("02.read_every", _keep_on_device).verdict is Verdict.CORRECT
    outcome = evaluate("02.read_every", _steps_only_when_reading)
    assert outcome.verdict is Verdict.WRONG and "every epoch must still run" in outcome.message


def test_overhead_width_with_and_without_an_accelerator():
    from course_utils.exercises import Verdict, evaluate
    from course_utils.exercises.lesson02 import overhead_width

    sizes, cpu = [10, 100, 1_000, 4_000], [0.1, 0.1, 0.3, 1.0]
    assert overhead_width(sizes, cpu) == 1_000
    assert overhead_width(sizes, cpu, [0.3, 0.05, 0.4, 0.2]) == 4_000     # 100 wins, 1000 loses again
    assert overhead_width(sizes, cpu, [0.3, 0.3, 0.4, 2.0]) is None
    assert evaluate("02.overhead_width", None, sizes=sizes, cpu_ms=cpu, dev_ms=[0.3, 0.3, 0.4, 2.0]).verdict is Verdict.CORRECT
    wrong = evaluate("02.overhead_width", 100, sizes=sizes, cpu_ms=cpu, dev_ms=[0.3, 0.05, 0.4, 0.2])
    assert wrong.verdict is Verdict.WRONG and "every larger" in wrong.message


def test_predict_run_is_judged_against_the_parts_given():
    from course_utils.exercises import Verdict, evaluate

    parts = {"forward": 50.0, "backward": 50.0}                        # 100 us an epoch -> 2 s
    assert evaluate("02.predict_run", 2.0, parts_us=parts).verdict is Verdict.CORRECT
    assert "one epoch" in evaluate("02.predict_run", 100.0, parts_us=parts).message


def test_momentum_lengthens_only_the_optimizer_step():
    from course_utils.exercises.lesson02 import ops_per_part

    plain, heavy = ops_per_part(0.0), ops_per_part(0.9)
    assert heavy["opt.step"] > plain["opt.step"]
    assert all(heavy[p] == plain[p] for p in ("forward", "loss", "zero_grad", "backward"))


# --- the explorer's memory estimate (course_utils.stepmodel) --------------------------------------

@pytest.mark.parametrize("width,batch", [(10, 120), (1_000, 1_000), (100, 10_000), (4_000, 120)])
def test_step_estimate_covers_the_measured_peak_and_is_not_far_above(width, batch):
    from torch import nn

    from course_utils.memtrack import track_peak
    from course_utils.models import IrisMLP
    from course_utils.stepmodel import mlp_step_bytes

    X, y = torch.rand(batch, 4), torch.randint(0, 3, (batch,))
    with track_peak("cpu") as t:            # everything the step creates: model, grads, activations
        x, yy = X.clone(), y.clone()
        model = IrisMLP(hidden=width)
        opt, loss_fn = torch.optim.SGD(model.parameters(), lr=0.01), nn.CrossEntropyLoss()
        for _ in range(2):
            loss = loss_fn(model(x), yy)
            opt.zero_grad()
            loss.backward()
            opt.step()
    estimate = sum(mlp_step_bytes(width, batch).values())
    assert t.peak_bytes <= estimate <= 1.5 * t.peak_bytes + 4096, (t.peak_bytes, estimate)


def test_fits_refuses_the_size_that_killed_the_kernel():
    from course_utils.stepmodel import fits, mlp_step_bytes

    need = sum(mlp_step_bytes(30_000, 100_000).values())
    assert need > 30 * 2**30                                      # three 12 GB activations
    refused = fits(need, torch.device("cpu"), free=24 * 2**30)
    assert not refused.ok and "refused" in str(refused)
    assert fits(10 * 2**20, torch.device("cpu"), free=2**30).ok
    assert not fits(8 * 2**20, torch.device("cpu"), free=10 * 2**20).ok   # 80 % of free: beyond the margin
