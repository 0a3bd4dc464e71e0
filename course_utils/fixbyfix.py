"""Lesson 10's plumbing around the loop with five planted mistakes: timing its variants in turns,
a verdict per fix from the paired rounds, the reference cards' speed-ups, and the claims table.

The loop itself, its mistakes and its fixes are written in the lesson (``notebooks/10_*``); these
helpers only time, judge and tabulate what the lesson measured, so the student's view shows the
training code and the numbers, not the bookkeeping. Used by: notebook 10 (core and deeper).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Callable, Iterable

import torch

from .i18n import t
from .timing import time_once


def time_in_turns(train: Callable[[frozenset], list[float]], variants: dict[str, frozenset], *, repeats: int,
                  steps: int, device: torch.device | str) -> tuple[dict[str, float], dict[str, list[float]], dict[str, list[float]]]:
    """Time every variant of the loop ``repeats`` times, in turns (slow, fix 1, ..., slow, fix 1, ...).

    Why in turns: if the machine gets busier halfway (other users, a browser), every variant is hit
    alike, and each round gives a fair *pair* (the step before a fix against the step with it).
    Returns the median seconds per step of each variant, every round's seconds per step (for the
    spread), and each variant's losses of its last run (to check that no fix changed the result).
    """
    from .progress import progress  # a live status line in JupyterLab, nothing in stored outputs

    for fixes in variants.values():
        train(fixes, steps=3)  # warm-up, not timed: the first steps pay one-off costs
    rounds: dict[str, list[float]] = {name: [] for name in variants}
    last: dict[str, list[float]] = {}
    for _ in progress(range(repeats), "timing the variants in turns"):
        for name, fixes in variants.items():
            out: list[list[float]] = []
            rounds[name].append(time_once(lambda: out.append(train(fixes)), device) / steps)
            last[name] = out[-1]
    return {name: statistics.median(s) for name, s in rounds.items()}, rounds, last


@dataclass(frozen=True)
class Saving:
    """What one fix saved, from the rounds in which the step before it and the step with it ran
    back to back: the median share of the step, and the middle half (IQR) of the rounds' shares."""

    median: float
    low: float
    high: float
    rounds: int

    @property
    def conclusive(self) -> bool:
        """False when the middle half of the rounds includes 0: the rounds disagree on the sign."""
        return self.rounds == 1 or not (self.low <= 0 <= self.high)

    def verdict(self) -> str:
        spread = (t("middle half of {rounds} rounds {low:+.0%} to {high:+.0%}", rounds=self.rounds, low=self.low,
                    high=self.high) if self.rounds > 1 else t("one round: no spread measured"))
        if not self.conclusive:
            return t("too small to tell on this run ({spread})", spread=spread)
        return (t("saved {share:.0%} of the step ({spread})", share=self.median, spread=spread) if self.median > 0
                else t("cost {share:.0%} more ({spread})", share=-self.median, spread=spread))


def savings(rounds: dict[str, list[float]]) -> dict[str, Saving]:
    """Each fix's :class:`Saving`, pairing it with the variant before it in the same round."""
    names = list(rounds)
    out = {}
    for before, fix in zip(names, names[1:]):
        shares = [(b - a) / b for b, a in zip(rounds[before], rounds[fix])]
        if len(shares) >= 4:
            q = statistics.quantiles(shares, n=4)
            low, high = q[0], q[2]
        else:
            low, high = min(shares), max(shares)
        out[fix] = Saving(statistics.median(shares), low, high, len(shares))
    return out


def reference_speedups(fixes: Iterable[str]) -> dict[str, list[float]]:
    """The cumulative speed-up after each fix in every results card that has them all, by card name."""
    from .ledger import available_references, load_reference

    fixes = list(fixes)
    out = {}
    for name in available_references():
        ref = load_reference(name)
        if all(f"profile.speedup_{f}" in ref for f in fixes):
            out[name] = [ref[f"profile.speedup_{f}"].value for f in fixes]
    return out


def compile_reference_line() -> str:
    """What the results cards measured for ``torch.compile`` (deeper notebook), in one cell of text."""
    from .ledger import available_references, load_reference

    parts = []
    for name in available_references():
        ref = load_reference(name)
        if "compile.iris_speedup" in ref and "compile.mid_speedup" in ref:
            first = ref.get("compile.iris_first_call_s")
            parts.append(t("card {name}: compiled steps ran at {iris:.2f}x (iris) and {mid:.2f}x (a mid-sized MLP) the "
                           "eager speed", name=name, iris=ref["compile.iris_speedup"].value, mid=ref["compile.mid_speedup"].value)
                         + (t(", after {seconds:.1f} s of compiling iris", seconds=first.value) if first else ""))
    return t("; ").join(parts) or t("no results card has these figures yet")


def compile_reference_verdict() -> str:
    """'does not hold' when every card's compiled steps were slower than eager, else a mixed verdict."""
    from .ledger import available_references, load_reference

    speedups = [load_reference(n)[k].value for n in available_references() for k in ("compile.iris_speedup", "compile.mid_speedup")
                if k in load_reference(n)]
    if not speedups:
        return t("not measured yet: run the deeper notebook")
    if max(speedups) < 1:
        return t("does not hold for these small models: compiled steps were slower, and compiling costs seconds")
    if min(speedups) >= 1:
        return t("holds for these models, once the compile time is paid back")
    return t("depends on the model: faster for some, slower for others")
