"""Lessons 03-05's judges on answers of the wrong type or shape: each gets a teaching hint (never a
crash reported as "your answer raised", never a raw warning), and a string that looks like a number
is not taken for one."""
from __future__ import annotations

import warnings

import pytest
import torch

from course_utils.exercises import REGISTRY, Verdict, evaluate

GRAD = torch.tensor(3.0, requires_grad=True) * 2  # a graph-attached tensor, as `loss` would be
MANY = torch.tensor([1.0, 2.0])

VALUE_CASES = [  # (key, wrong-type answer, a word the hint must contain)
    ("04.pct_of_peak", "70.8", "not a number"),
    ("04.pct_of_peak", GRAD, ".item()"),
    ("04.pct_of_peak", MANY, ".item()"),
    ("04.pct_of_peak", None, "not a number"),
    ("04.pct_of_peak", [70.8], "list"),
    ("04.bound", 1, '"memory" or "compute"'),
    ("04.bound", None, '"memory" or "compute"'),
    ("05.plan_hours", "4.3", "not a number"),
    ("05.plan_hours", GRAD, ".item()"),
    ("05.plan_hours", True, "not a number"),
    ("05.zero_stage", "2", "int from 0 to 3"),
    ("05.zero_stage", 2.0, "int from 0 to 3"),
    ("05.zero_stage", torch.tensor(2), "int from 0 to 3"),
    ("03.pruned_call", None, '"fc1(X)"'),
]


def _judge(key, answer):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a raw UserWarning (e.g. float() of a grad tensor) fails the test
        return evaluate(key, answer, **REGISTRY[key].example)


@pytest.mark.parametrize("key, answer, word", VALUE_CASES)
def test_wrong_type_answers_get_a_teaching_hint(key, answer, word):
    outcome = _judge(key, answer)
    assert outcome.verdict is Verdict.WRONG, outcome
    assert not outcome.message.startswith("your answer raised"), outcome.message
    assert word in outcome.message, outcome.message


CODE_CASES = [  # functions that return the wrong type
    ("04.achieved_tflops", lambda n, seconds: torch.tensor(2 * n**3 / seconds / 1e12), ".item()"),
    ("04.achieved_tflops", lambda n, seconds: str(2 * n**3 / seconds / 1e12), "not a number"),
    ("04.roofline_seconds", lambda flop, nbytes, peak, bw: [flop / peak, nbytes / bw], "list"),
    ("05.bytes_per_parameter", lambda optimizer, precision: {"weights": 4, "gradients": 4, "optimizer_state": 8}, "dict"),
    ("05.bytes_per_parameter", lambda optimizer, precision: "16", "not a number"),
    ("03.count_module_calls", lambda fn: [fn()], "number of calls"),
]


@pytest.mark.parametrize("key, answer, word", CODE_CASES)
def test_functions_returning_the_wrong_type_get_a_hint(key, answer, word):
    outcome = _judge(key, answer)
    assert outcome.verdict is Verdict.WRONG, outcome
    assert word in outcome.message, outcome.message


def test_ema_must_be_a_class_and_return_numbers():
    def ema(beta):
        return lambda value: value
    assert "should be a class" in _judge("03.ema", ema).message

    class TensorEMA:
        def __init__(self, beta):
            self.beta, self.mean = beta, None

        def __call__(self, value):
            self.mean = torch.tensor(value) if self.mean is None else self.beta * self.mean + (1 - self.beta) * value
            return self.mean
    assert ".item()" in _judge("03.ema", TensorEMA).message


def test_zero_stage_judge_teaches_binary_card_memory():
    ex = REGISTRY["05.zero_stage"]
    decimal = dict(ex.example, card_bytes=80e9)
    outcome = evaluate("05.zero_stage", ex.right(), **decimal)
    assert outcome.verdict is Verdict.WRONG and "2**30" in outcome.message, outcome
    assert ex.example["card_bytes"] == 80 * 2**30
    # the right stage at 80 GiB per card, 4 cards: ZeRO-2 (13e9 x (2 + 14/4) = 71.5e9 bytes per GPU)
    assert ex.right() == 2
    assert evaluate("05.zero_stage", 1, **ex.example).message.count("GiB") >= 2
