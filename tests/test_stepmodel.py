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

    notebooks = Path(__file__).resolve().parents[1] / "notebooks"
    for path in (notebooks / "02_iris_cpu_vs_gpu.ipynb", notebooks / "deeper" / "02_iris_cpu_vs_gpu.ipynb"):
        nb = json.loads(path.read_text())
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


def test_overhead_width_is_computed_from_this_runs_overhead_and_matmul_rate():
    """Issue 33: no longer read off a printed sweep; the width where a step's matmul FLOP at the measured
    rate take as long as the measured overhead, with a hint for each usual slip."""
    from course_utils.exercises import Verdict, evaluate
    from course_utils.exercises.lesson02 import FLOP_PER_WIDTH, overhead_width

    assert FLOP_PER_WIDTH * 10 == 40_800                                  # the FLOP counter's figure at width 10
    assert overhead_width(204.0, 100.0) == pytest.approx(5_000)           # 204 us x 100 GFLOP/s / 4,080 FLOP
    context = {"host_us": 204.0, "matmul_gflops": 100.0}
    assert evaluate("02.overhead_width", 5_050, **context).verdict is Verdict.CORRECT
    per_step = evaluate("02.overhead_width", 500, **context)             # used 40,800 FLOP per hidden unit
    assert per_step.verdict is Verdict.WRONG and "4,080" in per_step.message
    units = evaluate("02.overhead_width", 5_000e6, **context)
    assert units.verdict is Verdict.WRONG and "microseconds" in units.message


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


# --- lesson 02's transfer exercise (02.train_right) -----------------------------------------------

def _moves_data_every_epoch(model, X, y, device, epochs):
    model = model.to(device)
    opt, loss_fn = torch.optim.SGD(model.parameters(), lr=0.1), torch.nn.CrossEntropyLoss()
    losses = torch.empty(epochs, device=device)
    for epoch in range(epochs):
        loss = loss_fn(model(X.to(device)), y.to(device))       # moved in every epoch
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses[epoch] = loss.detach()
    return losses


def _hard_coded_cuda(model, X, y, device, epochs):
    model = model.to("cuda")
    return [0.0] * epochs


def test_train_right_judges_reads_moves_and_devices_by_running_the_function():
    from course_utils.exercises import Verdict, evaluate
    from course_utils.exercises.lesson02 import _device_agnostic_but_reads, _post_loop, _train_right

    assert evaluate("02.train_right", _train_right).verdict is Verdict.CORRECT
    assert evaluate("02.train_right", _post_loop).verdict is Verdict.NOT_ATTEMPTED
    reads = evaluate("02.train_right", _device_agnostic_but_reads)
    assert reads.verdict is Verdict.WRONG and "10 times in 10 epochs and 30 times in 30" in reads.message
    moves = evaluate("02.train_right", _moves_data_every_epoch)
    assert moves.verdict is Verdict.WRONG and "inside the loop" in moves.message
    if not torch.cuda.is_available():                         # where CUDA exists, "cuda" would run
        cuda = evaluate("02.train_right", _hard_coded_cuda)
        assert cuda.verdict is Verdict.WRONG and "`device` argument" in cuda.message


def test_train_right_puts_the_tensor_methods_back_even_when_the_answer_raises():
    from course_utils.exercises import evaluate

    before = {name: torch.Tensor.__dict__.get(name) for name in ("to", "cuda", "cpu", "tolist", "numpy")}

    def raises(model, X, y, device, epochs):
        X.tolist()
        raise ValueError("boom")

    assert "boom" in evaluate("02.train_right", raises).message
    assert {name: torch.Tensor.__dict__.get(name) for name in before} == before
    assert torch.ones(2).tolist() == [1.0, 1.0]


# --- lesson 02's first-screen figure: every GPU card, then the published runs ---------------------

def test_lesson02_headline_shows_a_gpu_card_as_soon_as_it_arrives(monkeypatch, tmp_path):
    """Issue 33: lesson 02's first figure must stay right when results/h200.json (or a contributed card)
    arrives: a GPU card with the iris keys appears by itself, before the published learner's laptop;
    a CPU card does not; its width sweep appears in the section 6 figure."""
    import json

    import matplotlib
    matplotlib.use("Agg")
    from course_utils import cards
    from course_utils.diagrams.lesson02 import (LEARNER_SOURCE, card_sweeps, epoch_bar, headline, headline_machines,
                                                launch_queue)

    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path))
    assert [m.source for m in headline_machines()] == [LEARNER_SOURCE] and card_sweeps() == {}
    env = {"python": "3.12.3", "torch": "2.11.0+cu126", "cuda_build": "12.6", "nvidia_driver": "550.54.15",
           "cpu_model": "Intel Xeon", "cpu_count": 2,
           "gpus": [{"name": "NVIDIA H200", "compute_capability": "9.0", "memory_gib": 140.4, "multiprocessors": 132}]}
    results = {"iris.cpu_seconds": 3.9, "iris.dev_seconds": 8.1, "iris.sweep_dev_ms_h10": 0.4, "iris.sweep_dev_ms_h1000": 0.41}
    for name, environment in (("h200", env), ("cpu-only", {**env, "gpus": []})):
        card = cards.new_card(name, environment, "cuda" if environment["gpus"] else "cpu", "test")
        card["notebooks"]["02_iris_cpu_vs_gpu"] = {"status": "ok", "seconds": 20.0, "parameters": {}, "error": None,
                                                  "results": {k: {"value": v, "unit": "s", "note": ""} for k, v in results.items()}}
        assert cards.problems(card, name) == []
        (tmp_path / f"{name}.json").write_text(json.dumps(card))
    machines = headline_machines()
    assert [(m.cpu_s, m.gpu_s, m.kind) for m in machines] == [(3.9, 8.1, "course card"), (19.09, 21.23, "published")]
    assert "h200" in machines[0].label
    assert card_sweeps("h") == {"card h200, GPU": ([10, 1000], [0.4, 0.41])}
    for fig in (headline(machines), launch_queue(), launch_queue(item=False), epoch_bar({"forward": 30.0}, 0.2, 150.0)):
        assert fig.axes and fig.axes[0].get_title()
