"""Lesson 04's exercises: achieved TFLOP/s from a size and a time, the roofline's time bound, which
roof caps a small matmul on this run's measured roofline, and a spec sheet's dense vs sparse peak."""
from __future__ import annotations

from typing import Any

from ..hardware import GPU_SPECS
from ..i18n import t
from ._types import not_a_number
from .core import close, exercise


def _achieved_tflops(n: int, seconds: float) -> float:
    return 2 * n**3 / seconds / 1e12


_MATMULS = [(8192, 1.5e-3), (1024, 2.0e-5), (4096, 0.25), (100, 3e-6)]


@exercise("04.achieved_tflops", kind="code", right=lambda: _achieved_tflops,
          wrong=lambda: lambda n, seconds: n**3 / seconds / 1e12)
def _tflops(answer: Any, **context: Any) -> str | None:
    for n, seconds in _MATMULS:
        got, want = answer(n, seconds), _achieved_tflops(n, seconds)
        hint = not_a_number(got, t("for n={n} in {seconds} s, what your function returns", n=n, seconds=seconds))
        if hint:
            return hint
        if close(got, want, rel=1e-6):
            continue
        if close(got, want / 2, rel=1e-6):
            return t("for n={n} in {seconds} s you return half the rate: each of the n³ multiply-adds is two "
                     "floating-point operations (§3).", n=n, seconds=seconds)
        if close(got, want * 1e3, rel=1e-6):
            return t("your figure is 1000x too large: that is GFLOP/s. A TFLOP is 10¹² operations.")
        return t("for n={n} in {seconds} s you return {got!r}. Count the FLOP of an n×n @ n×n product "
                 "(§3), divide by the seconds, and express the rate in units of 10¹² per second.",
                 n=n, seconds=seconds, got=got)
    return None


def _roofline_seconds(flop: float, nbytes: float, peak_flops: float, bandwidth: float) -> float:
    return max(flop / peak_flops, nbytes / bandwidth)


# (flop, bytes, peak FLOP/s, bytes/s): memory-bound, compute-bound, and on the ridge
_OPS = [(1e9, 12e9, 50e12, 3e12), (2 * 4096**3, 3 * 4096**2 * 2, 989e12, 4.8e12), (6e12, 3e10, 600e12, 3e12),
        (1e6, 4e6, 1e11, 2e10)]


@exercise("04.roofline_seconds", kind="code", right=lambda: _roofline_seconds,
          wrong=lambda: lambda flop, nbytes, peak_flops, bandwidth: flop / peak_flops + nbytes / bandwidth)
def _roofline(answer: Any, **context: Any) -> str | None:
    for flop, nbytes, peak, bw in _OPS:
        got, want = answer(flop, nbytes, peak, bw), _roofline_seconds(flop, nbytes, peak, bw)
        hint = not_a_number(got, t("what your function returns"))
        if hint:
            return hint
        if close(got, want, rel=1e-6):
            continue
        if close(got, flop / peak + nbytes / bw, rel=1e-6):
            return t("you added the two times. The roofline assumes the chip moves bytes while it computes, so "
                     "an operation takes as long as the slower of the two, not their sum (§5).")
        if close(got, min(flop / peak, nbytes / bw), rel=1e-6):
            return t("you took the faster of the two limits; the operation is held back by the slower one (§5).")
        return t("for {flop:.3g} FLOP and {nbytes:.3g} bytes on a chip with {peak:.3g} FLOP/s and {bw:.3g} bytes/s "
                 "you return {got!r} s. How long does the arithmetic alone take, and the memory traffic alone?",
                 flop=flop, nbytes=nbytes, peak=peak, bw=bw, got=got)
    return None


def _matmul_bound(n: int, peak: float, bandwidth: float, element_bytes: int = 4) -> str:
    intensity = 2 * n**3 / (3 * n * n * element_bytes)  # FLOP per byte of the three matrices
    return "memory" if intensity < peak / bandwidth else "compute"


@exercise("04.bound", right=lambda: "compute", wrong=lambda: "memory",
          example={"n": 64, "peak": 80e9, "bandwidth": 12e9})
def _bound(answer: Any, **context: Any) -> str | None:
    n, peak, bandwidth = context["n"], context["peak"], context["bandwidth"]
    if not isinstance(answer, str):
        return t('your answer is {answer!r}; answer with a string, "memory" or "compute", computed from the ridge '
                 '(best["fp32"] / bandwidth) and the matmul\'s arithmetic intensity.', answer=answer)
    choice = answer.strip().lower().removesuffix("-bound")
    if choice not in ("memory", "compute"):
        return t('answer "memory" or "compute"')
    want = _matmul_bound(n, peak, bandwidth)
    if choice == want:
        return None
    return t("on this run's roofline the ridge is at {ridge:.1f} FLOP/byte. Work out the "
             "matmul's arithmetic intensity for n={n} in fp32 (§5: FLOP over the bytes of three "
             "n×n matrices) and see on which side of the ridge it falls.", ridge=peak / bandwidth, n=n)


_H100 = next(s for s in GPU_SPECS if s.name == "H100 SXM")
_MEASURED_TFLOPS = 700.0


@exercise("04.pct_of_peak", right=lambda: 100 * _MEASURED_TFLOPS / _H100.bf16_tflops,
          wrong=lambda: 100 * _MEASURED_TFLOPS / _H100.bf16_sparse_tflops)
def _pct(answer: Any, **context: Any) -> str | None:
    right = 100 * _MEASURED_TFLOPS / _H100.bf16_tflops
    hint = not_a_number(answer)
    if hint:
        return hint
    if close(answer, right, rel=0.01):
        return None
    if close(answer, 100 * _MEASURED_TFLOPS / _H100.bf16_sparse_tflops, rel=0.01):
        return t("that divides by the 1,979 TFLOP/s headline, which holds only for 2:4-sparse matrices. "
                 "Which figure applies to an ordinary dense matmul (the deeper notebook's §2)?")
    if close(answer, right / 100, rel=0.01):
        return t("that is a fraction; give the percentage (0.5 -> 50).")
    return t("{answer!r} is not 700 TFLOP/s as a percentage of the H100 SXM's dense BF16 peak in the deeper "
             "notebook's §2 table.", answer=answer)
