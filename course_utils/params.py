"""Checking a notebook's ``parameters`` cell, so a bad value fails at once with a clear message
instead of deep inside a training loop (or, worse, silently running something else)."""
from __future__ import annotations

from typing import Any, Sequence


class ParameterError(ValueError):
    """A notebook parameter is out of range or of the wrong type."""


def check_int(name: str, value: Any, lo: int, hi: int) -> int:
    """``value`` must be an integer in ``[lo, hi]``. Used by: every notebook."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParameterError(f"{name} must be an integer in [{lo}, {hi}], got {value!r} ({type(value).__name__})")
    if not lo <= value <= hi:
        raise ParameterError(f"{name} must be in [{lo}, {hi}], got {value}")
    return value


def check_float(name: str, value: Any, lo: float, hi: float) -> float:
    """``value`` must be a real number in ``[lo, hi]``. Used by: every notebook with rates or sizes."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParameterError(f"{name} must be a number in [{lo}, {hi}], got {value!r}")
    if not lo <= value <= hi:
        raise ParameterError(f"{name} must be in [{lo}, {hi}], got {value}")
    return float(value)


def check_bool(name: str, value: Any) -> bool:
    """``value`` must be True or False (papermill passes real booleans). Used by: every notebook."""
    if not isinstance(value, bool):
        raise ParameterError(f"{name} must be True or False, got {value!r}")
    return value


def check_choice(name: str, value: Any, choices: Sequence[Any]) -> Any:
    """``value`` must be one of ``choices``. Used by: every notebook."""
    if value not in choices:
        raise ParameterError(f"{name} must be one of {list(choices)}, got {value!r}")
    return value


def check_sizes(name: str, values: Any, lo: int, hi: int) -> list[int]:
    """A non-empty list of integers in ``[lo, hi]``, returned sorted. Used by: notebooks 01, 02, 04."""
    if not isinstance(values, (list, tuple)) or not values:
        raise ParameterError(f"{name} must be a non-empty list of integers, got {values!r}")
    return sorted(check_int(f"{name}[{i}]", v, lo, hi) for i, v in enumerate(values))
