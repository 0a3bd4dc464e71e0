"""Lesson 08's and 09's small helpers: the loader timeline's schedule, the worker start method, the
GPU scaling read from results cards, and that every diagram draws (issue 33)."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from course_utils.ddp_helpers import card_scaling  # noqa: E402
from course_utils.diagrams import lesson08, lesson09  # noqa: E402
from course_utils.loading import worker_context  # noqa: E402


def test_zero_workers_prepare_then_train_one_after_the_other():
    bars = lesson08.loader_schedule(30.0, 10.0, workers=0, batches=3)
    assert max(start + length for _, start, length, _ in bars) == pytest.approx(3 * 40.0)
    assert {row for row, *_ in bars} == {"main"}


def test_enough_workers_leave_the_main_process_waiting_only_for_the_first_batch():
    bars = lesson08.loader_schedule(30.0, 10.0, workers=3, batches=6)
    waits = [b for b in bars if b[3] == "wait"]
    assert len(waits) == 1 and waits[0][1:3] == (0.0, 30.0)
    assert max(start + length for row, start, length, _ in bars if row == "main") == pytest.approx(30.0 + 6 * 10.0)


def test_too_few_workers_make_the_step_wait_at_their_pace():
    bars = lesson08.loader_schedule(30.0, 10.0, workers=2, batches=6)  # 2 batches per 30 ms, 1 used per 10 ms
    end = max(start + length for row, start, length, _ in bars if row == "main")
    assert end == pytest.approx(3 * 30.0 + 2 * 10.0)  # the last pair arrives at 90 ms, then two steps


def test_worker_context_honours_an_explicit_method():
    assert worker_context("spawn").get_start_method() == "spawn"


def _card(rates: dict[int, float]) -> dict:
    return {"notebooks": {"09_distributed_data_parallel": {"results": {
        f"ddp.nccl_throughput_{n}gpu": {"value": v, "unit": "samples/s", "note": ""} for n, v in rates.items()}}}}


def test_card_scaling_needs_one_gpu_and_another_count():
    cards = {"two": _card({1: 100.0, 2: 180.0, 4: 340.0}), "one-only": _card({1: 100.0}), "cpu": {"notebooks": {}}}
    assert card_scaling(cards) == {"two": {1: 1.0, 2: 1.8, 4: 3.4}}


def test_every_diagram_draws():
    import matplotlib.pyplot as plt

    for fig in (lesson08.loader_timeline(30.0, 10.0), lesson09.dp_vs_ddp(), lesson09.bucket_overlap(),
                lesson09.sampler_deal([[0, 2], [1, 3]])):
        assert fig.axes
        plt.close(fig)
