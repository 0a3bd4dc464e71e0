"""Lesson 10's exercises. In the core: which fix was worth most in another order (computed from this
run's timings, which the cell prints without the savings), a divergence check that reads no value
(judged by counting reads on hidden losses), a forward without a graph break (judged with
``torch._dynamo.explain`` on hidden inputs). In the deeper notebook: the break-even of compiling with
a recompile, from this run's measurements."""
from __future__ import annotations

import numbers
import warnings
from typing import Any

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from ..models import IrisMLP
from ..i18n import t
from .core import close, exercise

FIXES = ("log_floats", "no_item", "prep_once", "data_on_device", "fused_optimizer")


# --- 10.fix_order ---------------------------------------------------------------------------------

def _savings(variants: dict[str, frozenset], step_s: dict[str, float]) -> dict[str, float]:
    names = list(variants)
    return {fix: step_s[prev] - step_s[fix] for prev, fix in zip(names, names[1:])}


_ORDER = ["fused_optimizer", "log_floats", "no_item", "prep_once", "data_on_device"]
_EXAMPLE_VARIANTS = {"slow": frozenset()}
for _fix in _ORDER:
    _EXAMPLE_VARIANTS[_fix] = _EXAMPLE_VARIANTS[list(_EXAMPLE_VARIANTS)[-1]] | {_fix}
_EXAMPLE_STEPS = {"slow": 10e-3, "fused_optimizer": 8e-3, "log_floats": 4e-3, "no_item": 3.9e-3,
                  "prep_once": 1.5e-3, "data_on_device": 1.5e-3}


@exercise("10.fix_order", right=lambda: "log_floats", wrong=lambda: "prep_once",
          example={"variants": _EXAMPLE_VARIANTS, "step_s": _EXAMPLE_STEPS})
def _fix_order(answer: Any, *, variants: dict[str, frozenset], step_s: dict[str, float], **context: Any) -> str | None:
    names = list(variants)
    if names[0] != "slow" or variants["slow"] or names[1:2] != ["fused_optimizer"]:
        return t("start from the slow loop ('slow': no fixes), then apply 'fused_optimizer' first.")
    for prev, fix in zip(names, names[1:]):
        if variants[fix] != variants[prev] | {fix}:
            return t("each variant keeps the fixes before it and adds its own: '{fix}' should be {fixes}.",
                     fix=fix, fixes=sorted(variants[prev] | {fix}))
    if set(variants[names[-1]]) != set(FIXES):
        return t("the last variant must have all five fixes {fixes}.", fixes=list(FIXES))
    saved = _savings(variants, step_s)
    if not isinstance(answer, str) or answer not in saved:
        return t("answer with the name of one fix, one of {fixes}.", fixes=list(saved))
    best = max(saved, key=saved.get)
    if answer == best or saved[answer] >= 0.9 * saved[best] > 0:
        return None
    return t("in your order, '{answer}' saved {saved_us:.0f} us per step; another fix saved more. A fix's "
             "saving is the time per step of the variant before it minus its own (section 3's table).",
             answer=answer, saved_us=saved[answer] * 1e6)



def _not_a_number(answer: Any) -> str | None:
    """A teaching hint when ``answer`` is not a plain Python number (a tensor, a string, a list, None)."""
    if torch.is_tensor(answer):
        return t("answer with a Python number, not a tensor: `.item()` turns a one-element tensor into one.")
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real):
        return t("answer with a Python number (got {kind}).", kind=type(answer).__name__)
    return None

# --- 10.hidden_sync -------------------------------------------------------------------------------

class _CountReads(TorchDispatchMode):
    """Counts the values copied from a tensor into Python (``aten::_local_scalar_dense``): the syncs."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if func is torch.ops.aten._local_scalar_dense.default:
            self.reads += 1
        return func(*args, **(kwargs or {}))


def _watch(loss: torch.Tensor, i: int, diverged: torch.Tensor) -> None:
    diverged[i] = loss.detach() > 10


def _watch_with_if(loss: torch.Tensor, i: int, diverged: torch.Tensor) -> None:
    if loss > 10:
        diverged[i] = True


@exercise("10.hidden_sync", kind="code", right=lambda: _watch, wrong=lambda: _watch_with_if)
def _hidden_sync(answer: Any, **context: Any) -> str | None:
    if not callable(answer):
        return t("pass the function itself (got {kind}).", kind=type(answer).__name__)
    values = [1.5, 12.0, 3.0, 50.0, 10.0, 0.2]
    w = torch.ones((), requires_grad=True)
    diverged = torch.zeros(len(values), dtype=torch.bool)
    with _CountReads() as counter:
        for i, v in enumerate(values):
            answer(w * v, i, diverged)
    if counter.reads:
        return t("your function read {reads} value(s) from a tensor into Python: a Python `if` on a "
                 "tensor (or .item(), float()) waits for the GPU. Keep the comparison a tensor and store it.",
                 reads=counter.reads)
    want = torch.tensor([v > 10 for v in values])
    if not torch.equal(diverged.bool(), want):
        return t("for losses {values} the flags should be {want}, you set {got}.",
                 values=values, want=want.tolist(), got=diverged.tolist())
    return None


# --- 10.branch_free -------------------------------------------------------------------------------

class _Branchy(IrisMLP):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(x)
        if h.sum() > 0:
            h = h * 2
        return self.fc2(self.relu(h))


class _BranchFree(IrisMLP):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(x)
        h = torch.where(h.sum() > 0, h * 2, h)
        return self.fc2(self.relu(h))


@exercise("10.branch_free", kind="code", right=lambda: _BranchFree, wrong=lambda: _Branchy)
def _branch_free(answer: Any, **context: Any) -> str | None:
    if isinstance(answer, nn.Module):
        return t("pass the class itself, not an instance of it: the check builds its own model from your class.")
    if not (isinstance(answer, type) and issubclass(answer, nn.Module)):
        return t("pass your model class (a subclass of IrisMLP), got {kind}.", kind=type(answer).__name__)
    with torch.random.fork_rng():
        torch.manual_seed(7)
        ref = _Branchy()
        x = torch.rand(5, 4) + 0.5
    mine = answer()
    mine.load_state_dict(ref.state_dict())
    direction = ref.fc1.weight.detach().sum(dim=0)
    for sign in (1.0, -1.0):  # one input takes each branch
        xs = x * 0.01 + sign * 50 * direction / direction.norm()
        with torch.no_grad():
            if not torch.allclose(mine(xs), ref(xs), atol=1e-5):
                return t("on inputs you have not seen, your forward computes something else than the branching one: "
                         "torch.where(condition, if_true, if_false) must pick h * 2 where h.sum() > 0, h otherwise.")
    from torch import _dynamo  # here, not at the top: importing Dynamo takes a second, and every lesson imports this package

    _dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = _dynamo.explain(mine)(x)
    _dynamo.reset()
    if report.graph_break_count or report.graph_count != 1:
        return t("Dynamo captured {graphs} graph(s) with {breaks} break(s): a Python "
                 "`if` on a tensor's value cannot be traced. Compute both outcomes and select with torch.where.",
                 graphs=report.graph_count, breaks=report.graph_break_count)
    return None


# --- 10.break_even --------------------------------------------------------------------------------
# Deeper notebook, exercise 1: the break-even when the model compiles twice (the last, smaller batch of an
# epoch with dynamic=False), from this run's first-call and per-step times. Not printed above the exercise:
# the notebook prints the break-even of one compile only.

_EXAMPLE_MID = {"eager": {"first_s": 0.5, "step_s": 2e-3}, "compiled": {"first_s": 5.01, "step_s": 1e-3}}


@exercise("10.break_even", right=lambda: 9020.0, wrong=lambda: 4510.0, example={"result": _EXAMPLE_MID})
def _break_even(answer: Any, *, result: dict | None, **context: Any) -> str | None:
    if result is None:
        return t("section 5 did not compile the mid-sized model in this run (COMPILE='off' or no compiler): nothing to judge.")
    e, c = result["eager"], result["compiled"]
    saving = e["step_s"] - c["step_s"]
    if saving <= 0:
        if answer is None:
            return None
        return t("here a compiled step is not faster than an eager one, so compiling never pays off: answer None.")
    one = (c["first_s"] - e["first_s"]) / saving
    if answer is not None and (hint := _not_a_number(answer)) is not None:
        return hint
    if answer is not None and close(answer, 2 * one, rel=1e-3):
        return None
    if answer is not None and close(answer, one, rel=1e-3):
        return t("that is the break-even of one compile; the model compiles twice, so the cost to win back doubles.")
    if answer is not None and (close(answer, 2 * c["first_s"] / saving, rel=1e-3) or close(answer, c["first_s"] / saving, rel=1e-3)):
        return t("the eager model's first call is not free either: what compiling costs is the *extra* time of the "
                 "compiled first call over the eager one.")
    return t("break-even = (cost of the compiles) / (eager seconds per step - compiled seconds per step); each compile "
             "costs (first call compiled - first call eager), from compile_results['mid'] of this run.")
