"""Lesson 11's exercises: the bytes a rank holds between steps per ZeRO stage (code, judged against
this run's own measurements of every rank), ZeRO-3's traffic over DDP's on a ring with a real
reduce-scatter (from this run's counted bytes), and the smallest world size at which ZeRO-3's model
states fit a smaller card (lesson 05's formula)."""
from __future__ import annotations

import math
from typing import Any

from ..i18n import t
from .core import close, exercise

# --- 11.held_bytes ----------------------------------------------------------------------------


def _held(n_params: int, stage: int, world: int) -> float:
    """fp32 Adam: 4 + 4 + 8 bytes per parameter; FSDP2 (stages 2 and 3) is fully sharded between steps."""
    if stage >= 2:
        return 16 * n_params / world
    return 16 * n_params - (8 * n_params - 8 * n_params / world) * (stage == 1)


def _zero_formula(n_params: int, stage: int, world: int) -> float:  # lesson 05's, for the typical mistake
    sharded = {0: 0, 1: 8, 2: 12, 3: 16}[stage]
    return n_params * (16 - sharded + sharded / world)


HELD_EXAMPLE = {"n_params": 1000, "measured": {(1, 0): 16000, (2, 0): 16000, (2, 1): 12000, (2, 2): 8000,
                                               (2, 3): 8000, (4, 2): 4000}}


@exercise("11.held_bytes", kind="code", right=lambda: _held, wrong=lambda: _zero_formula, example=HELD_EXAMPLE)
def _held_bytes(answer: Any, *, n_params: int, measured: dict, **context: Any) -> str | None:
    wrong = []
    for (world, stage), got in sorted(measured.items()):
        try:
            value = float(answer(n_params, stage, world))
        except Exception as exc:  # the student's code raising is a wrong answer, with its reason
            return t("your function raised {name}: {exc} for stage {stage}, world {world}",
                     name=type(exc).__name__, exc=exc, stage=stage, world=world)
        if not close(value, got, rel=0.01):
            wrong.append((world, stage, value, got))
    if not wrong:
        return None
    world, stage, value, got = wrong[0]
    if stage == 2 and close(value, _zero_formula(n_params, 2, world), rel=0.01):
        return t("that is lesson 05's ZeRO-2 column, which describes the peak; between steps FSDP2 has resharded "
                 "every unit after its backward, so what does a ZeRO-2 rank hold of the weights then?")
    if stage == 1:
        return t("ZeRO-1 shards only the optimizer state (8 of Adam's 16 bytes per parameter); weights and gradients stay whole.")
    return t("for stage {stage} on {world} rank(s) this run measured {got:,.0f} bytes per rank and your function says "
             "{value:,.0f}: count 4 bytes of weights, 4 of gradients and 8 of Adam's state per parameter, and divide "
             "by the world size only what that stage shards.", stage=stage, world=world, got=got, value=value)


# --- 11.ring_ratio ----------------------------------------------------------------------------


def _ring(ag_bytes: float, rs_bytes: float, ar_bytes: float, world: int) -> float:
    return (ag_bytes + rs_bytes) * (world - 1) / world / (ar_bytes * 2 * (world - 1) / world)


RING_EXAMPLE = {"ag_bytes": 4_210_688, "rs_bytes": 2_105_344, "ar_bytes": 2_105_344, "world": 2}


@exercise("11.ring_ratio", right=lambda: _ring(**RING_EXAMPLE), wrong=lambda: 3.0, example=RING_EXAMPLE)
def _ring_ratio(answer: Any, *, ag_bytes: float, rs_bytes: float, ar_bytes: float, world: int,
                **context: Any) -> str | None:
    truth = _ring(ag_bytes, rs_bytes, ar_bytes, world)
    if close(answer, truth, rel=0.01):
        return None
    if close(answer, (ag_bytes + rs_bytes) / ar_bytes, rel=0.01):
        return t("that is the ratio of the tensors' sizes; on a ring an all-reduce sends 2(N-1)/N of its tensor per "
                 "rank, an all-gather or a reduce-scatter (N-1)/N: weigh each kind before dividing.")
    if close(answer, (ag_bytes * (world - 1) / world + rs_bytes * 2 * (world - 1) / world)
             / (ar_bytes * 2 * (world - 1) / world), rel=0.01):
        return t("that is what gloo ran (its reduce-scatter is an all-reduce); the question asks for a real reduce-scatter.")
    return t("add the all-gathers' and the reduce-scatter's wire bytes, (N-1)/N of each tensor, and divide by DDP's all-reduce's.")


# --- 11.smallest_world ------------------------------------------------------------------------


def _smallest(n_params: int, budget_bytes: float) -> int:
    return math.ceil(16 * n_params / budget_bytes)


WORLD_EXAMPLE = {"n_params": 526_336, "budget_bytes": 0.25 * 16 * 526_336}


@exercise("11.smallest_world", right=lambda: _smallest(**WORLD_EXAMPLE), wrong=lambda: 3, example=WORLD_EXAMPLE)
def _smallest_world(answer: Any, *, n_params: int, budget_bytes: float, **context: Any) -> str | None:
    truth = _smallest(n_params, budget_bytes)
    if isinstance(answer, bool) or not isinstance(answer, int):
        return t("answer with a whole number of ranks (an int).")
    if answer == truth:
        return None
    if answer == truth - 1:
        return t("with that many ranks each one still holds a little more than the card: round up, not down.")
    if answer < truth:
        return t("too few: ZeRO-3 divides all 16 bytes per parameter by N; find the N that brings 16 x parameters / N under the card.")
    return t("more than needed: a smaller world size already brings 16 x parameters / N under the card.")
