"""Lesson 08's exercises: per-epoch augmentation seeding (judged on hidden (seed, epoch, index)
triples), how many workers this run's preparation and training times need (computed, not read off),
and which start methods can use a dataset class defined in a notebook."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..i18n import t
from .core import exercise


def _augment_rng(seed: int, epoch: int, index: int) -> np.random.Generator:
    return np.random.default_rng([seed, epoch, index])


def _same_every_epoch(seed: int, epoch: int, index: int) -> np.random.Generator:
    return np.random.default_rng([seed, index])


def _draw(rng: Any) -> tuple[float, ...]:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(t("augment_rng must return a numpy Generator (np.random.default_rng(...)), got {kind}",
                          kind=type(rng).__name__))
    return tuple(rng.random(4))


@exercise("08.augment_rng", kind="code", right=lambda: _augment_rng, wrong=lambda: _same_every_epoch)
def _augment(answer: Any, **context: Any) -> str | None:
    if not callable(answer):
        return t("pass the function itself, `augment_rng` (got {kind}).", kind=type(answer).__name__)
    triples = [(s, e, i) for s in (0, 7) for e in (0, 1, 2) for i in (0, 1, 2, 513)]
    draws = {t: _draw(answer(*t)) for t in triples}
    np.random.seed(12345)  # a worker's global state must not matter
    if any(_draw(answer(*t)) != draws[t] for t in triples):
        return t("two calls with the same (seed, epoch, index) gave different draws: a worker, or a rerun, would see "
                 "other crops. Seed the generator from the three numbers only (the exercise's text).")
    if draws[(0, 0, 0)] == draws[(0, 1, 0)]:
        return t("sample 0 gets the same draws in epoch 0 and epoch 1: every epoch would see the same crops and flips.")
    for a in triples:
        for b in triples:
            if a < b and draws[a] == draws[b]:
                return t("{a} and {b} (seed, epoch, index) give the same draws: two different samples or epochs share "
                         "their augmentation (adding the numbers up, for one, lets them collide). Give the generator all three.",
                         a=a, b=b)
    return None


def _workers_needed(prepare_ms: float, compute_ms: float) -> int:
    return max(1, math.ceil(prepare_ms / compute_ms - 1e-9))


@exercise("08.best_workers", right=lambda: 4, wrong=lambda: 3, example={"prepare_ms": 42.0, "compute_ms": 11.0})
def _best_workers(answer: Any, *, prepare_ms: float, compute_ms: float, **context: Any) -> str | None:
    """The fewest workers that keep the step from waiting, each with a free core: ceil(prepare / train)."""
    if isinstance(answer, bool) or not isinstance(answer, int):
        return t("answer with a whole number of workers (an int), got {kind}", kind=type(answer).__name__)
    need = _workers_needed(prepare_ms, compute_ms)
    if answer == need:
        return None
    if answer < 1:
        return t("with no worker the main process prepares every batch itself: the step waits the whole preparation.")
    if answer < need:
        return t("with {answer} worker(s), each batch takes {prepare_ms:.0f} ms to prepare, so they hand over "
                 "{answer} batch(es) every {prepare_ms:.0f} ms, while the step wants one every {compute_ms:.0f} ms: "
                 "the step still waits. Round up, do not round down.",
                 answer=answer, prepare_ms=prepare_ms, compute_ms=compute_ms)
    return t("{answer} workers keep the step busy, but fewer do too: you need the batches to arrive at least as fast "
             "as the step uses them, and not more workers than that.", answer=answer)


_METHODS = {"fork", "spawn", "forkserver"}


@exercise("08.start_methods", right=lambda: {"fork"}, wrong=lambda: {"fork", "forkserver"})
def _start_methods(answer: Any, **context: Any) -> str | None:
    if not isinstance(answer, (set, frozenset, list, tuple)) or not set(answer) <= _METHODS:
        return t("answer with a set of start methods taken from {methods}", methods=sorted(_METHODS))
    got = set(answer)
    if got == {"fork"}:
        return None
    if "spawn" in got:
        return t("a spawned worker is a fresh Python process: it unpickles the dataset by importing `module.ClassName`. "
                 "In which module does a class defined in a notebook live, and does the fresh process have it (the exercise's text, and deeper §1)?")
    if "forkserver" in got:
        return t("a forkserver worker is forked from the clean server process, not from your notebook: the server only "
                 "imported what was preloaded (here torch and course_utils.datasets). Does it know your class?")
    return t("one start method copies the whole parent process, notebook namespace included: which one (the exercise's text, and deeper §1)?")
