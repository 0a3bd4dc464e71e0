"""Lesson 07's exercises: an atomic ``save`` judged by injecting a failure mid-write, a ``resume``
judged by comparing a resumed run with an uninterrupted one, and the share of memory this run's
checkpointing saved, judged against this run's own numbers."""
from __future__ import annotations

import numbers
import os
import random
import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .. import checkpoint as ckpt
from ..i18n import t
from .core import close, exercise


# --- 07.atomic_save ------------------------------------------------------------------------------

class _FailsMidSave:
    """Pickling this raises, as a full disk or an interrupted save would, after the file was opened."""

    def __reduce__(self) -> Any:
        raise OSError(28, t("No space left on device (injected by the check)"))


def _save_atomic(state: Any, path: str | Path) -> None:
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _save_naive(state: Any, path: str | Path) -> None:
    torch.save(state, path)


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) if torch.is_tensor(a[k]) else a[k] == b[k] for k in a)


def _spy(calls: dict[str, list]) -> dict[str, Callable]:
    """Wrappers of os.fsync / os.replace / os.rename that note their calls and then do the real thing."""
    real = {name: getattr(os, name) for name in ("fsync", "replace", "rename")}

    def wrap(name: str) -> Callable:
        def spy(*args: Any, **kwargs: Any) -> Any:
            calls.setdefault(name, []).append(args)
            return real[name](*args, **kwargs)
        return spy

    return {name: wrap(name) for name in real} | {"_real": real}


@exercise("07.atomic_save", kind="code", right=lambda: _save_atomic, wrong=lambda: _save_naive)
def _atomic_save(answer: Any, **context: Any) -> str | None:
    if not callable(answer):
        return t("pass the function itself, `save` (got {kind}).", kind=type(answer).__name__)
    good = {"step": 7, "w": torch.arange(6.0)}
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "ckpt.pt"
        calls: dict[str, list] = {}
        spies = _spy(calls)
        try:
            for name in ("fsync", "replace", "rename"):
                setattr(os, name, spies[name])
            answer(good, target)
        finally:
            for name, fn in spies["_real"].items():
                setattr(os, name, fn)
        if not target.is_file() or not _same(torch.load(target, weights_only=True), good):
            return t("save(state, path) must leave a file at `path` that torch.load(path, weights_only=True) reads back as `state`.")
        others = sorted(p.name for p in Path(tmp).iterdir() if p != target)
        if others:
            return t("after a successful save the folder also holds {others}: rename the temporary file onto the target.", others=others)
        moved = calls.get("replace", []) + calls.get("rename", [])
        if any(Path(src).parent != Path(dst).parent for src, dst, *_ in moved):
            return t("the temporary file is in another folder: os.replace is atomic only within one file system (section 6).")
        try:
            answer({"step": 8, "w": torch.zeros(6), "extra": _FailsMidSave()}, target)
        except Exception:  # noqa: BLE001 - re-raising the failure is right; the files are what we judge
            pass
        try:
            intact = _same(torch.load(target, weights_only=True), good)
        except Exception:  # noqa: BLE001 - a truncated file fails in any layer of the loader
            intact = False
        if not intact:
            return t("a save that failed half-way (we injected a full disk) destroyed the previous checkpoint: "
                     "write to a temporary file in the same folder and move it onto the name only when it is complete.")
        others = sorted(p.name for p in Path(tmp).iterdir() if p != target)
        if others:
            return t("the failed save left {others} behind: remove the temporary file when the save fails, then re-raise.", others=others)
        if not calls.get("fsync"):
            return t("the new name may point at bytes still in the operating system's cache: flush and os.fsync the "
                     "temporary file before os.replace (section 6).")
    return None


# --- 07.resume ------------------------------------------------------------------------------------

_N = 6  # steps before and after the interruption


def _build() -> tuple[nn.Module, torch.optim.Optimizer, Any]:
    model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 3))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    return model, opt, torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.7)


def _steps(model: nn.Module, opt: torch.optim.Optimizer, sched: Any, start: int, stop: int) -> None:
    """A loop that draws from every generator: torch (batch, dropout), NumPy (noise), Python (scale)."""
    X = torch.linspace(-1, 1, 200).reshape(40, 5)
    y = torch.arange(40) % 3
    for _ in range(start, stop):
        idx = torch.randint(0, 40, (8,))
        xb = (X[idx] + torch.from_numpy(np.random.normal(0, 0.1, (8, 5))).float()) * random.uniform(0.9, 1.1)
        loss = F.cross_entropy(model(xb), y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()


def _seed(s: int) -> None:
    torch.manual_seed(s)
    np.random.seed(s)
    random.seed(s)


def _state_of(model: nn.Module, opt: torch.optim.Optimizer, sched: Any, step: int) -> dict[str, Any]:
    return {"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
            "step": step, "rng": ckpt.rng_state()}


def _resume(folder: Path, model: nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any,
            restore_rng: bool = True) -> int:
    found = ckpt.load_latest(folder)
    if found is None:
        return 0
    state = found[1]
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    if restore_rng:
        ckpt.set_rng_state(state["rng"])
    return state["step"]


def _resume_without_rng(folder: Path, model: nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any) -> int:
    """The typical mistake: everything but the random generators (kept with the student's signature)."""
    return _resume(folder, model, optimizer, scheduler, restore_rng=False)


@exercise("07.resume", kind="code", right=lambda: _resume, wrong=lambda: _resume_without_rng,
          example={"state_of": _state_of})
def _resume_judge(answer: Any, *, state_of: Callable[..., dict], **context: Any) -> str | None:
    if not callable(answer):
        return t("pass the function itself, `resume` (got {kind}).", kind=type(answer).__name__)
    saved = (torch.get_rng_state(), np.random.get_state(), random.getstate())  # the lesson's own draws go on as before
    try:
        with tempfile.TemporaryDirectory() as tmp:
            empty = Path(tmp) / "empty"
            empty.mkdir()
            if answer(empty, *_build()) != 0:
                return t("a folder without checkpoints means a fresh start: return step 0 (load_latest returns None).")
            _seed(3)
            ref = _build()
            _steps(*ref, 0, 2 * _N)
            _seed(3)
            first = _build()
            _steps(*first, 0, _N)
            ckpt.save_checkpoint(state_of(*first, _N), tmp, _N)
            _seed(99)  # a new process: other weights, other generators
            fresh = _build()
            step = answer(Path(tmp), *fresh)
            if step != _N:
                return t("the checkpoint was saved after step {saved}; your resume returned step {step!r}.", saved=_N, step=step)
            _steps(*fresh, step, 2 * _N)
    finally:
        torch.set_rng_state(saved[0])
        np.random.set_state(saved[1])
        random.setstate(saved[2])
    drift = max((a - b).abs().max().item() for a, b in zip(ref[0].state_dict().values(), fresh[0].state_dict().values()))
    if drift > 0:
        return t("resumed and continued, the weights differ from the uninterrupted run's by up to {drift:.1e}. A resumed "
                 "run must restore everything the next steps depend on: weights, optimizer moments, the LR schedule, "
                 "and every random generator (batches, dropout, noise): section 5.", drift=drift)
    return None


# --- 07.memory_share ------------------------------------------------------------------------------

_EXAMPLE = {"weights": 1.5, "plain": 13.6, "sqrt": 6.4, "adamw": 39.7, "activations": 59.9}


def sgd_share(weights: float, plain: float, sqrt: float) -> float:
    """Percent of the whole step saved without optimizer state: weights + step peak, plain vs sqrt(n) segments."""
    return 100 * (1 - (weights + sqrt) / (weights + plain))


@exercise("07.memory_share", right=lambda: sgd_share(1.5, 13.6, 6.4), wrong=lambda: 39.7, example=_EXAMPLE)
def _memory_share(answer: Any, *, weights: float, plain: float, sqrt: float, adamw: float, activations: float,
                  **context: Any) -> str | None:
    if torch.is_tensor(answer):
        return t("answer with a Python float, not a tensor (`.item()` converts a one-element tensor).")
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real):
        return t("answer with a number in percent (got {kind}).", kind=type(answer).__name__)
    truth = sgd_share(weights, plain, sqrt)
    if close(answer, truth, rel=0.02, abs_=0.5):
        return None
    if close(answer, adamw, rel=0.02, abs_=0.5):
        return t("that is this run's saving *with* AdamW, printed in section 3. Without optimizer state the fixed "
                 "part is only the weights: add them to each step's peak and compare again.")
    if close(answer, activations, rel=0.02, abs_=0.5):
        return t("that is the share of the *activations* saved. The whole step also holds the weights and the "
                 "gradients, which stay whatever you recompute.")
    if close(answer, truth / 100, rel=0.02, abs_=0.005):
        return t("give it in percent (0-100), not as a fraction.")
    if close(answer, 100 * (1 - sqrt / plain), rel=0.02, abs_=0.5):
        return t("you left the weights out: they are part of the whole-step memory with any optimizer.")
    return t("whole-step memory without optimizer state = weights_mib + peak_mib[s]; compare s = n_sqrt with s = 1: "
             "100 x (1 - with / without).")
