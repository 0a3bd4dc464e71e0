"""Checking a notebook's ``parameters`` cell, so a bad value fails at once with a clear message
instead of deep inside a training loop (or, worse, silently running something else)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from .i18n import t


class ParameterError(ValueError):
    """A notebook parameter is out of range or of the wrong type."""


def check_int(name: str, value: Any, lo: int, hi: int) -> int:
    """``value`` must be an integer in ``[lo, hi]``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParameterError(t("{name} must be an integer in [{lo}, {hi}], got {value!r} ({kind})",
                                name=name, lo=lo, hi=hi, value=value, kind=type(value).__name__))
    if not lo <= value <= hi:
        raise ParameterError(t("{name} must be in [{lo}, {hi}], got {value}", name=name, lo=lo, hi=hi, value=value))
    return value


def check_float(name: str, value: Any, lo: float, hi: float) -> float:
    """``value`` must be a real number in ``[lo, hi]``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParameterError(t("{name} must be a number in [{lo}, {hi}], got {value!r}", name=name, lo=lo, hi=hi, value=value))
    if not lo <= value <= hi:
        raise ParameterError(t("{name} must be in [{lo}, {hi}], got {value}", name=name, lo=lo, hi=hi, value=value))
    return float(value)


def check_bool(name: str, value: Any) -> bool:
    """``value`` must be True or False (papermill passes real booleans)."""
    if not isinstance(value, bool):
        raise ParameterError(t("{name} must be True or False, got {value!r}", name=name, value=value))
    return value


def check_choice(name: str, value: Any, choices: Sequence[Any]) -> Any:
    """``value`` must be one of ``choices``."""
    if value not in choices:
        raise ParameterError(t("{name} must be one of {choices}, got {value!r}", name=name, choices=list(choices), value=value))
    return value


def check_sizes(name: str, values: Any, lo: int, hi: int) -> list[int]:
    """A non-empty list of integers in ``[lo, hi]``, returned sorted."""
    if not isinstance(values, (list, tuple)) or not values:
        raise ParameterError(t("{name} must be a non-empty list of integers, got {values!r}", name=name, values=values))
    return sorted(check_int(f"{name}[{i}]", v, lo, hi) for i, v in enumerate(values))


# --- One-line validation of a whole parameters cell -------------------------------------------
# A lesson writes its checks as a declarative spec, so the setup cell stays one line:
#     check_params(globals(), EPOCHS=Int(1, 100_000), LR=Float(1e-5, 1.0), SIZES=Sizes(1, 4096),
#                  DEVICE=DEVICE_CHOICE, SMOKE=Bool())
# The errors are the same clear ParameterErrors as the check_* functions above (they do the work).


@dataclass(frozen=True)
class Int:
    lo: int
    hi: int

    def __call__(self, name: str, value: Any) -> int:
        return check_int(name, value, self.lo, self.hi)


@dataclass(frozen=True)
class Float:
    lo: float
    hi: float

    def __call__(self, name: str, value: Any) -> float:
        return check_float(name, value, self.lo, self.hi)


@dataclass(frozen=True)
class Sizes:
    lo: int
    hi: int

    def __call__(self, name: str, value: Any) -> list[int]:
        return check_sizes(name, value, self.lo, self.hi)


@dataclass(frozen=True)
class Choice:
    choices: tuple[Any, ...]

    def __init__(self, *choices: Any) -> None:
        object.__setattr__(self, "choices", tuple(choices))

    def __call__(self, name: str, value: Any) -> Any:
        return check_choice(name, value, self.choices)


@dataclass(frozen=True)
class Bool:
    def __call__(self, name: str, value: Any) -> bool:
        return check_bool(name, value)


DEVICE_CHOICE = Choice("auto", "cpu", "cuda", "mps")
Spec = Int | Float | Sizes | Choice | Bool


def check_params(namespace: dict[str, Any], **spec: Spec) -> None:
    """Check every named parameter in ``namespace`` (a notebook's ``globals()``) against ``spec``.

    Normalised values are written back (e.g. ``Sizes`` sorts its list, ``Float`` turns ``1`` into
    ``1.0``). A name missing from the namespace is a bug in the lesson, not in the student's input.
    """
    for name, rule in spec.items():
        if name not in namespace:
            raise NameError(f"check_params: the parameters cell defines no {name!r}")
        namespace[name] = rule(name, namespace[name])
