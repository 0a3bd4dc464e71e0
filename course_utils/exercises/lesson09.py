"""Lesson 09's exercises: the learning rate for a bigger global batch (linear scaling rule),
gradient accumulation under ``no_sync`` (judged by running it in a one-process gloo group in this
process, counting the all-reduces DDP starts), and the communication share of a step with more
computation, from this run's own benchmark."""
from __future__ import annotations

import copy
from contextlib import nullcontext
import numbers
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from ..i18n import t
from .core import close, exercise

# --- 09.lr_linear --------------------------------------------------------------------------


def _lr(base_lr: float, base_batch: int, gpus: int, batch: int, accum: int) -> float:
    return base_lr * gpus * batch * accum / base_batch



def _not_a_number(answer: Any) -> str | None:
    """A teaching hint when ``answer`` is not a plain Python number (a tensor, a string, a list, None)."""
    if torch.is_tensor(answer):
        return t("answer with a Python number, not a tensor: `.item()` turns a one-element tensor into one.")
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real):
        return t("answer with a Python number (got {kind}).", kind=type(answer).__name__)
    return None


LR_EXAMPLE = {"base_lr": 0.1, "base_batch": 32, "gpus": 8, "batch": 16, "accum": 2}


@exercise("09.lr_linear", right=lambda: _lr(**LR_EXAMPLE), wrong=lambda: _lr(**{**LR_EXAMPLE, "accum": 1}),
          example=LR_EXAMPLE)
def _lr_linear(answer: Any, *, base_lr: float, base_batch: int, gpus: int, batch: int, accum: int,
               **context: Any) -> str | None:
    if (hint := _not_a_number(answer)) is not None:
        return hint
    if close(answer, _lr(base_lr, base_batch, gpus, batch, accum), rel=0.01):
        return None
    if close(answer, _lr(base_lr, base_batch, gpus, batch, 1), rel=0.01):
        return t("the micro-batches count too: one optimizer step averages the gradient over GPUs x batch per GPU "
                 "x micro-batches samples (the global batch of the section on the learning rate).")
    if close(answer, base_lr * gpus, rel=0.01):
        return t("the reference learning rate was tuned for a global batch of {base_batch}, not for one GPU: "
                 "scale by new global batch / old global batch.", base_batch=base_batch)
    return t("the linear rule multiplies the learning rate by the factor the global batch grew: work out the "
             "old and the new global batch (samples per optimizer step) first.")


# --- 09.accumulate ---------------------------------------------------------------------------

def _accumulate(ddp, x, y, micro):
    total = torch.zeros((), device=x.device)
    for i, (xs, ys) in enumerate(zip(x.chunk(micro), y.chunk(micro))):
        with ddp.no_sync() if i < micro - 1 else nullcontext():
            loss = F.cross_entropy(ddp(xs), ys) / micro
            loss.backward()
        total += loss.detach()
    return total


def _accumulate_always_syncing(ddp, x, y, micro):
    total = torch.zeros((), device=x.device)
    for xs, ys in zip(x.chunk(micro), y.chunk(micro)):
        loss = F.cross_entropy(ddp(xs), ys) / micro
        loss.backward()  # every backward all-reduces: correct gradients, micro times the traffic
        total += loss.detach()
    return total


def _run_in_one_rank_group(student, micro: int) -> tuple[int, float, float, float]:
    """Run ``student`` on a DDP model in a one-process gloo group (made here if none exists).
    Returns (all-reduce rounds, largest gradient error, loss error, rounds of one plain backward)."""
    made = not dist.is_initialized()
    if made:  # an in-memory store: no port, no network, nothing left behind
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        torch.manual_seed(0)
        model, x, y = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 3)), torch.randn(12, 5), torch.arange(12) % 3
        reference = copy.deepcopy(model)
        full = F.cross_entropy(reference(x), y)
        full.backward()
        ddp, calls = DDP(model), []

        def counting_hook(state, bucket):  # DDP calls this once per bucket it all-reduces
            calls.append(bucket.index())
            fut = torch.futures.Future()
            fut.set_result(bucket.buffer())  # one rank: the sum over ranks is the buffer itself
            return fut

        ddp.register_comm_hook(None, counting_hook)
        F.cross_entropy(ddp(x), y).backward()  # one plain step: how many buckets one sync costs
        per_sync = len(calls)
        ddp.zero_grad(set_to_none=True)
        calls.clear()
        loss = student(ddp, x, y, micro)
        grad_err = max((p.grad - q.grad).abs().max().item() if p.grad is not None else float("inf")
                       for p, q in zip(model.parameters(), reference.parameters()))
        return len(calls) // max(per_sync, 1), grad_err, abs(float(loss) - full.item()), per_sync
    finally:
        if made:
            dist.destroy_process_group()


@exercise("09.accumulate", kind="code", right=lambda: _accumulate, wrong=lambda: _accumulate_always_syncing)
def _accumulate_judge(answer: Any, **context: Any) -> str | None:
    if not callable(answer):
        return t("pass the function itself, `accumulate` (got {kind}).", kind=type(answer).__name__)
    rounds, grad_err, loss_err, _ = _run_in_one_rank_group(answer, micro=3)
    if grad_err > 1e-5:
        return t("the gradients differ from one backward of the whole batch's mean loss: did you divide each "
                 "micro-batch's loss by the number of micro-batches, and call backward for every one of them?")
    if rounds == 0:
        return t("DDP never all-reduced: the last micro-batch must run outside no_sync(), or the ranks keep "
                 "their own gradients and drift apart.")
    if rounds > 1:
        return t("DDP all-reduced {rounds} times for one optimizer step: every micro-batch but the last must "
                 "run inside `with ddp.no_sync():`, forward included (DDP prepares the all-reduce in forward).",
                 rounds=rounds)
    if loss_err > 1e-5:
        return t("the gradients are right; return the mean loss of the whole batch (the sum of the divided losses).")
    return None


# --- 09.comm_share_doubled -------------------------------------------------------------------

def _doubled(step_s: float, compute_s: float) -> float:
    comm = max(0.0, step_s - compute_s)
    return comm / (2 * compute_s + comm)


SHARE_EXAMPLE = {"step_s": 0.0203, "compute_s": 0.0136}


@exercise("09.comm_share_doubled", right=lambda: _doubled(**SHARE_EXAMPLE),
          wrong=lambda: (SHARE_EXAMPLE["step_s"] - SHARE_EXAMPLE["compute_s"]) / SHARE_EXAMPLE["step_s"] / 2,
          example=SHARE_EXAMPLE)
def _comm_share_doubled(answer: Any, *, step_s: float, compute_s: float, **context: Any) -> str | None:
    if (hint := _not_a_number(answer)) is not None:
        return hint
    truth = _doubled(step_s, compute_s)
    if close(answer, truth, rel=0.03, abs_=0.005):
        return None
    comm = max(0.0, step_s - compute_s)
    if close(answer, comm / step_s / 2, rel=0.03, abs_=0.002):
        return t("halving the share assumes the whole step doubles; only the computation doubles, the exposed "
                 "all-reduce time stays: write the new step time as computation + communication first.")
    if close(answer, comm / step_s, rel=0.03, abs_=0.002):
        return t("that is this run's share; the question asks for a step whose computation takes twice as long.")
    return t("the communication this run added per step is step time minus the time without all-reduce "
             "(bench_many['step_s'] and ['compute_s']); double only the computation, then divide.")
