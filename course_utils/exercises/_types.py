"""Teaching hints for answers of the wrong type, shared by lessons 03-05's judges.

Why not let ``close()`` try ``float(answer)``: a string such as ``"12.5"`` would then pass as a number,
a tensor that requires grad raises a raw UserWarning when converted, and a tensor of several
elements makes the judge crash. Each of these gets a hint that says what to hand in instead.
(A candidate for ``core.py``; kept here so that the lessons' judges do not wait for it.)
"""
from __future__ import annotations

import numbers
from typing import Any

from ..i18n import t


def not_a_number(answer: Any, what: str | None = None) -> str | None:
    """A teaching hint when ``answer`` is not one plain real number; ``None`` when it is. ``what`` names
    the answer in the hint (already in the lesson's language: ``t("what your function returns")``)."""
    what = t("your answer") if what is None else what
    if isinstance(answer, bool) or answer is None or isinstance(answer, (str, bytes)):
        return t("{what} is {answer!r}, not a number: compute it as a float or an int.", what=what, answer=answer)
    if type(answer).__module__.split(".")[0] == "torch":
        return t("{what} is a {kind}; the check wants a plain Python number. Compute it from "
                 "Python floats, or take the value out of a one-element tensor with .item().",
                 what=what, kind=type(answer).__name__)
    if not isinstance(answer, numbers.Real):
        return t("{what} is a {kind}, not a number: hand in one float or int.", what=what, kind=type(answer).__name__)
    return None
