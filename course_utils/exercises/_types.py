"""Teaching hints for answers of the wrong type, shared by lessons 03-05's judges.

Why not let ``close()`` try ``float(answer)``: a string such as ``"12.5"`` would then pass as a number,
a tensor that requires grad raises a raw UserWarning when converted, and a tensor of several
elements makes the judge crash. Each of these gets a hint that says what to hand in instead.
(A candidate for ``core.py``; kept here so that the lessons' judges do not wait for it.)
"""
from __future__ import annotations

import numbers
from typing import Any


def not_a_number(answer: Any, what: str = "your answer") -> str | None:
    """A teaching hint when ``answer`` is not one plain real number; ``None`` when it is."""
    if isinstance(answer, bool) or answer is None or isinstance(answer, (str, bytes)):
        return f"{what} is {answer!r}, not a number: compute it as a float or an int."
    if type(answer).__module__.split(".")[0] == "torch":
        return (f"{what} is a {type(answer).__name__}; the check wants a plain Python number. Compute it from "
                "Python floats, or take the value out of a one-element tensor with .item().")
    if not isinstance(answer, numbers.Real):
        return f"{what} is a {type(answer).__name__}, not a number: hand in one float or int."
    return None
