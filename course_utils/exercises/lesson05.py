"""Lesson 05's exercises: the bytes-per-parameter table as code, how many parameters fit in the memory a
card reports, which ZeRO stage lets a model fit (deeper notebook), and how long a run takes at this run's
own measured time per step."""
from __future__ import annotations

import math
import numbers
from typing import Any

from ..i18n import t
from ._types import not_a_number as _not_a_number
from .core import close, exercise

GiB = 2**30  # an "80 GB" A100 reports 80 GiB (nvidia-smi: 81,920 MiB); a "16 GB" T4 only 15 GiB (ECC)


# (weights, gradients, optimizer state) bytes per parameter: the table of lesson 05, section 1
_TABLE = {
    ("sgd", "fp32"): (4, 4, 0), ("sgd-momentum", "fp32"): (4, 4, 4),
    ("adam", "fp32"): (4, 4, 8), ("adamw", "fp32"): (4, 4, 8),
    ("sgd", "bf16-mixed"): (2, 2, 4), ("sgd-momentum", "bf16-mixed"): (2, 2, 8),
    ("adam", "bf16-mixed"): (2, 2, 12), ("adamw", "bf16-mixed"): (2, 2, 12),
}
# Two optimizers the table lacks, so an answer must follow the rule, not copy the table: with PyTorch's
# defaults RMSprop keeps one buffer (square_avg) and Adagrad one (sum) per parameter.
_HIDDEN = {**_TABLE, ("rmsprop", "fp32"): (4, 4, 4), ("adagrad", "fp32"): (4, 4, 4),
           ("rmsprop", "bf16-mixed"): (2, 2, 8), ("adagrad", "bf16-mixed"): (2, 2, 8)}


def _bytes_per_parameter(optimizer: str, precision: str) -> int:
    return sum(_HIDDEN[optimizer, precision])


def _forgets_the_master_copy(optimizer: str, precision: str) -> int:
    w, g, s = _HIDDEN[optimizer, precision]
    return w + g + (s - 4 if precision == "bf16-mixed" else s)


@exercise("05.bytes_per_parameter", kind="code", right=lambda: _bytes_per_parameter,
          wrong=lambda: _forgets_the_master_copy)
def _bpp(answer: Any, **context: Any) -> str | None:
    for (optimizer, precision), parts in _HIDDEN.items():
        got = answer(optimizer, precision)
        if isinstance(got, dict):
            return t("your function returns a dict; return the total bytes per parameter as one int "
                     "(weights + gradients + optimizer state).")
        if _not_a_number(got):
            return t("for optimizer={optimizer!r}, precision={precision!r} you return {got!r}, not a number: return "
                     "the total bytes per parameter as an int.", optimizer=optimizer, precision=precision, got=got)
        if got != sum(parts):
            return t("for optimizer={optimizer!r}, precision={precision!r} you return {got!r}. Add weights + "
                     "gradients + optimizer state: how many buffers does this optimizer keep per parameter, and in "
                     "the ZeRO accounting of mixed precision, which fp32 copy does the optimizer hold as well?",
                     optimizer=optimizer, precision=precision, got=got)
    return None


def _zero_bytes_per_gpu(n_params: float, stage: int, n_gpus: int, w: int, g: int, s: int) -> float:
    sharded = {0: 0, 1: s, 2: g + s, 3: w + g + s}[stage]
    return n_params * (w + g + s - sharded + sharded / n_gpus)


def _smallest_stage(n_params: float, n_gpus: int, card_bytes: float, w: int, g: int, s: int) -> int | None:
    return next((k for k in range(4) if _zero_bytes_per_gpu(n_params, k, n_gpus, w, g, s) <= card_bytes), None)


_ZERO_EXAMPLE = {"n_params": 13e9, "n_gpus": 4, "card_bytes": 80 * GiB, "w": 2, "g": 2, "s": 12}


@exercise("05.zero_stage", right=lambda: _smallest_stage(**_ZERO_EXAMPLE), wrong=lambda: 1, example=_ZERO_EXAMPLE)
def _zero(answer: Any, *, n_params: float, n_gpus: int, card_bytes: float, w: int, g: int, s: int,
          **context: Any) -> str | None:
    if card_bytes % 10**9 == 0 and card_bytes % GiB != 0:
        return t("CARD_BYTES = {card_bytes:.3g} counts the card in decimal GB (10^9 bytes), but an \"80 GB\" A100 or "
                 "H100 reports about 80 GiB = 80 * 2**30 bytes (81,920 MiB in nvidia-smi). Put CARD_BYTES back to "
                 "{gb:.0f} * 2**30.", card_bytes=card_bytes, gb=card_bytes / 10**9)
    want = _smallest_stage(n_params, n_gpus, card_bytes, w, g, s)
    if isinstance(answer, numbers.Integral) and not isinstance(answer, bool):
        answer = int(answer)  # numpy integers too
    elif answer is not None:
        return t("answer with the stage number, an int from 0 to 3 (or None if not even ZeRO-3 fits)")
    if answer == want:
        return None
    if answer is None:
        return t("one of the stages does fit here: work out the per-GPU bytes of every stage with the deeper "
                 "notebook's §4 formula.")
    if 0 <= answer <= 3:
        need = _zero_bytes_per_gpu(n_params, answer, n_gpus, w, g, s)
        if need > card_bytes:
            return t("with ZeRO-{stage} each GPU still holds {need:.1f} GiB of model states, more than the "
                     "card's {card:.0f} GiB. "
                     "Which of weights, gradients and state does that stage leave whole on every GPU?",
                     stage=answer, need=need / GiB, card=card_bytes / GiB)
        return t("ZeRO-{stage} fits, but a lower stage may fit too and shards less (less communication). "
                 "Work out the per-GPU bytes for every stage, from 0 up.", stage=answer)
    return t("answer with the stage number, an int from 0 to 3 (or None if not even ZeRO-3 fits)")


_T4 = {"total_bytes": 15360 * 2**20, "bytes_per_param": 16}  # a T4 in nvidia-smi: 15,360 MiB; fp32 + AdamW


@exercise("05.card_params", right=lambda: _T4["total_bytes"] / 16, wrong=lambda: 16e9 / 16, example=_T4)
def _card_params(answer: Any, *, total_bytes: float, bytes_per_param: float, **context: Any) -> str | None:
    hint = _not_a_number(answer)
    if hint:
        return hint
    want = total_bytes / bytes_per_param
    if close(answer, want, rel=1e-3):
        return None
    if close(answer, 16e9 / bytes_per_param, rel=1e-3) or close(answer, 16 * GiB / bytes_per_param, rel=1e-3):
        return t("that uses the card's nominal 16 GB. Use what the card reports, TOTAL_BYTES: a T4 keeps 6.25 % of "
                 "its memory for ECC, so it reports less than the box says.")
    if close(answer, total_bytes / 4, rel=1e-3) or close(answer, total_bytes / 8, rel=1e-3):
        return t("count every part per parameter: weights, gradients and AdamW's two moments, in fp32 (§1's table).")
    if close(answer, want / 2**30, rel=1e-3) or close(answer, want / 1e9, rel=1e-3):
        return t("answer in parameters, not in billions or GiB: e.g. 1.5e9.")
    return t("parameters = the bytes the card reports / bytes per parameter (weights + gradients + optimizer state).")


def _hours(samples: float, batch: int, step_s: float) -> float:
    return math.ceil(samples / batch) * step_s / 3600


_PLAN_EXAMPLE = {"samples": 1e9, "batch": 64, "step_s": 0.002}


@exercise("05.plan_hours", right=lambda: _hours(**_PLAN_EXAMPLE), wrong=lambda: 1e9 * 0.002 / 3600,
          example=_PLAN_EXAMPLE)
def _plan(answer: Any, *, samples: float, batch: int, step_s: float, **context: Any) -> str | None:
    want = _hours(samples, batch, step_s)
    hint = _not_a_number(answer)
    if hint:
        return hint
    if close(answer, want, rel=0.01):
        return None
    if close(answer, want * batch, rel=0.01):
        return t("that is one step per sample: a step processes a whole batch. How many steps make the samples?")
    if close(answer, want * 60, rel=0.01) or close(answer, want * 3600, rel=0.01):
        return t("check the units: the measured time per step is in seconds, the answer in hours.")
    return t("total time = steps x time per step after warm-up (§6); use this run's measured step time, "
             "and count the steps the samples need at this batch size.")
