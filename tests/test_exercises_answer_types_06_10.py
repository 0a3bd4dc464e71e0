"""Lessons 06-10's judges meet answers of the wrong type or shape with a hint that teaches, never a
crash ("your answer raised ...") and never a pass: a tensor where a number is expected, a string,
None, a list, an instance where a class is expected, a value where a function is expected."""
from __future__ import annotations

import pytest
import torch

from course_utils.exercises import REGISTRY, Verdict, evaluate
from course_utils.models import IrisMLP

NUMBER_KEYS = ["06.loss_scale", "07.memory_share", "09.lr_linear", "09.comm_share_doubled", "10.break_even"]
FUNCTION_KEYS = ["06.amp_step", "07.atomic_save", "07.resume", "08.augment_rng", "09.accumulate", "10.hidden_sync"]


def _judge(key, answer):
    ex = REGISTRY[key]
    outcome = evaluate(key, answer, **ex.example)
    assert outcome.verdict is Verdict.WRONG, f"{key} accepted {answer!r}: {outcome}"
    assert not outcome.message.startswith("your answer raised"), f"{key}: the judge crashed on {answer!r}: {outcome}"
    assert len(outcome.message) >= 20, outcome
    return outcome.message


@pytest.mark.parametrize("key", NUMBER_KEYS)
def test_a_tensor_for_a_number_gets_told_to_use_item(key):
    right = REGISTRY[key].right()
    message = _judge(key, torch.tensor(float(right), requires_grad=True) * 1.0)  # graph attached, right value
    assert ".item()" in message


@pytest.mark.parametrize("key", NUMBER_KEYS)
@pytest.mark.parametrize("answer", ["0.1", [0.1], True])
def test_other_non_numbers_get_a_hint(key, answer):
    assert "number" in _judge(key, answer) or "float" in _judge(key, answer)


def test_a_numpy_number_is_a_number():
    import numpy as np

    ex = REGISTRY["09.comm_share_doubled"]
    assert evaluate("09.comm_share_doubled", np.float32(ex.right()), **ex.example).verdict is Verdict.CORRECT


@pytest.mark.parametrize("key", FUNCTION_KEYS)
@pytest.mark.parametrize("answer", [0.5, "save", None])
def test_a_value_where_a_function_is_expected(key, answer):
    assert "function" in _judge(key, answer)


def test_an_instance_where_a_class_is_expected():
    assert "class itself" in _judge("10.branch_free", IrisMLP())
    assert "class" in _judge("10.branch_free", 3)


@pytest.mark.parametrize("answer", [["log_floats"], 3, None])
def test_fix_order_wants_one_name(answer):
    assert "name of one fix" in _judge("10.fix_order", answer)


@pytest.mark.parametrize("key,answer", [("06.cpu_fp32_ops", "softmax"), ("06.cpu_fp32_ops", None),
                                        ("08.start_methods", "fork"), ("08.best_workers", "2"), ("08.best_workers", 2.0)])
def test_sets_and_counts_of_the_wrong_type(key, answer):
    _judge(key, answer)
