"""Lesson 01's bookkeeping for its torch.mm sweep: the ledger keys it records, and the GPU curves of
every results card present, so the lesson's plot gains a GPU line the day a GPU card is shipped.

Kept out of the notebook on purpose: the student reads the sweep and the plot, not a wall of
``record(...)`` lines and card lookups. Used by: notebook 01 (the core lesson).
"""
from __future__ import annotations

import re

from .i18n import t
from .ledger import gpu_card_results, record

_KEY = re.compile(r"^tensors\.mm_gflops_(?P<kind>[a-z]+)_(?P<n>\d+)$")


def record_sweep(kind: str, gflops: dict[int, float], *, seconds: float | None = None,
                 threads: int | None = None) -> None:
    """Record one sweep's GFLOP/s per size as ``tensors.mm_gflops_<kind>_<n>``, plus its peak.

    For the CPU also the largest size, its rate, the wall time and the thread count, the figures the
    results cards compare across machines (``tests/expected/01_tensors_and_devices.json``)."""
    where = "the CPU" if kind == "cpu" else kind
    for n, g in gflops.items():
        record(f"tensors.mm_gflops_{kind}_{n}", g, unit="GFLOP/s", note=f"torch.mm {n}x{n} float32 on {where}")
    record(f"tensors.mm_gflops_{kind}_peak", max(gflops.values()), unit="GFLOP/s", note=f"best size on {where}")
    if kind != "cpu":
        return
    largest = max(gflops)
    record("tensors.mm_cpu_largest_n", largest, note="largest matrix size timed on the CPU")
    record("tensors.mm_gflops_cpu_largest", gflops[largest], unit="GFLOP/s", note="CPU at the largest size")
    if seconds is not None:
        record("tensors.mm_cpu_sweep_seconds", seconds, unit="s", note="wall time of the CPU sweep")
    if threads is not None:
        record("tensors.mm_cpu_threads", threads, note="threads of the CPU curve")


def record_speedup(cpu: dict[int, float], accel: dict[int, float], kind: str) -> float:
    """Record and return how many times the accelerator's rate is the CPU's, at the largest size both timed."""
    common = max(set(cpu) & set(accel))
    return record("tensors.mm_speedup_at_cpu_largest", accel[common] / cpu[common], unit="x",
                  note=f"{kind} / CPU at n={common}")


def card_curves() -> dict[str, dict[int, float]]:
    """torch.mm GFLOP/s by size from every results card measured on a GPU, labelled ``"<card> card (<kind>)"``.

    Empty when no GPU card is shipped: a CPU-only run then plots this machine alone."""
    curves: dict[str, dict[int, float]] = {}
    for name, ref in gpu_card_results().items():
        by_kind: dict[str, dict[int, float]] = {}
        for key, result in ref.items():
            m = _KEY.match(key)
            if m and m["kind"] != "cpu":
                by_kind.setdefault(m["kind"], {})[int(m["n"])] = result.value
        for kind, curve in sorted(by_kind.items()):
            curves[f"{name} card ({kind})"] = dict(sorted(curve.items()))
    return curves


def mm_claim(cpu: dict[int, float], gpu_curves: dict[str, dict[int, float]]) -> tuple[str, str]:
    """("this run measured", "verdict") for the claim "GPU matrix products are tens to hundreds of times
    faster", from this run's CPU sweep and every GPU curve at hand (this run's GPU, the GPU cards).

    The verdict follows the numbers: the claim is checked at the smallest and the largest size that
    the CPU and each GPU both timed; without any GPU figure it says so instead of guessing."""
    small, big = min(cpu), max(cpu)
    measured = t("CPU: {small_rate:.3g} GFLOP/s at n={small}, {big_rate:.3g} at n={big}", small_rate=cpu[small],
                 small=small, big_rate=cpu[big], big=big)
    ratios, parts = [], []
    for label, curve in gpu_curves.items():
        common = sorted(set(curve) & set(cpu))
        if not common:
            continue
        lo, hi = common[0], common[-1]
        ratios.append((curve[lo] / cpu[lo], curve[hi] / cpu[hi]))
        parts.append(t("{label}: {low:.2g}x the CPU at n={lo}, {high:.3g}x at n={hi}", label=label, low=ratios[-1][0],
                       lo=lo, high=ratios[-1][1], hi=hi))
    if not ratios:
        return (measured + t("; no GPU figure here"),
                t("not checked here: no GPU in this run and no GPU results card"))
    measured += t("; ") + t("; ").join(parts)
    if all(hi >= 10 for _, hi in ratios):
        verdict = (t("right for large products only: at the smallest size fixed costs dominate")
                   if any(lo < 10 for lo, _ in ratios) else t("right at every size compared"))
    else:
        verdict = t("not in these figures: a GPU was under 10x the CPU even at the largest size compared")
    return measured, verdict
