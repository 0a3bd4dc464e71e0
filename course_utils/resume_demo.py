"""A small training run that checkpoints and resumes, meant to run as its own process (notebook 07).

    python -m course_utils.resume_demo train --folder DIR --until 40 --total 80            # steps 0 -> 40
    python -m course_utils.resume_demo train --folder DIR --until 80 --total 80 --resume   # 40 -> 80
    python -m course_utils.resume_demo stall-save --target FILE --ready FILE [--naive]

``train`` prints one JSON line (start step, end step, checkpoint path, last loss). Every random
generator is used on purpose: the torch generator picks the batch and drives dropout, NumPy adds
input noise, Python's ``random`` jitters the input scale, so a resume that forgets one of them
drifts away from the uninterrupted run.

``stall-save`` writes a ~8 MB checkpoint and stops half-way: after the first MiB it flushes,
creates the ``--ready`` file and sleeps, so the parent can kill it mid-write deterministically.
With ``--naive`` it writes straight onto the target (``open(target, "wb")``), otherwise through
:func:`course_utils.checkpoint.atomic_save`.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .checkpoint import atomic_save, load_latest, restore_training_state, save_checkpoint, training_state
from .repro import seed_everything

FEATURES, CLASSES, SAMPLES, BATCH = 32, 4, 512, 64


def make_data(device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """A fixed synthetic classification set (its own generator: independent of the global RNG)."""
    g = torch.Generator().manual_seed(1234)
    X = torch.randn(SAMPLES, FEATURES, generator=g)
    y = (X[:, :CLASSES] + 0.5 * torch.randn(SAMPLES, CLASSES, generator=g)).argmax(dim=1)
    return X.to(device), y.to(device)


def build(device: torch.device, total_steps: int, lr: float = 1e-2) -> tuple[nn.Module, torch.optim.Optimizer, Any, torch.amp.GradScaler]:
    """Model, optimizer, LR schedule and GradScaler, built the same way by every process.

    The scaler (and fp16 autocast) is enabled only on CUDA; on CPU its state dict is ``{}``. It starts
    at a loss scale of 2**10 rather than 2**16, so that the first steps do not overflow and get skipped.
    """
    model = nn.Sequential(
        nn.Linear(FEATURES, 64), nn.ReLU(), nn.Dropout(0.1),
        nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.1),
        nn.Linear(64, CLASSES),
    ).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=total_steps)
    scaler = torch.amp.GradScaler("cuda", init_scale=2.0**10, enabled=device.type == "cuda")
    return model, optimizer, scheduler, scaler


def train(
    folder: str | Path,
    until: int,
    total: int,
    *,
    device: str | torch.device = "cpu",
    resume: bool = False,
    restore_rng: bool = True,
    keep: int = 3,
    seed: int = 0,
    threads: int = 0,
) -> dict[str, Any]:
    """Train to step ``until`` (of a ``total``-step schedule), starting fresh or from the newest
    checkpoint in ``folder``, and save a checkpoint at the end. Returns a summary dict.

    ``restore_rng=False`` loads everything except the random generators (to show why they matter).
    ``threads`` > 0 sets torch's CPU thread count for the run (restored afterwards): runs compared
    bit for bit must use the same count.
    Used by: notebook 07 (in-process for the uninterrupted run, as ``train`` in a fresh process for the resume).
    """
    previous = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        return training_loop(Path(folder), until, total, torch.device(device), resume, restore_rng, keep, seed)
    finally:
        torch.set_num_threads(previous)


def training_loop(folder: Path, until: int, total: int, dev: torch.device, resume: bool, restore_rng: bool,
                  keep: int, seed: int) -> dict[str, Any]:
    """The body of :func:`train`: seed, build, maybe restore, train, save. Shown in notebook 07."""
    seed_everything(seed)
    X, y = make_data(dev)
    model, optimizer, scheduler, scaler = build(dev, total)
    step = 0
    if resume:
        found = load_latest(folder)
        if found is None:
            raise FileNotFoundError(f"--resume: no checkpoint in {folder}")
        path, state = found
        if not restore_rng:
            state["rng"] = training_state(model, optimizer, scheduler, scaler, 0)["rng"]  # the current ones
        step, _ = restore_training_state(state, model, optimizer, scheduler, scaler)
    start = step
    model.train()
    loss = torch.tensor(float("nan"))
    while step < until:
        idx = torch.randint(0, SAMPLES, (BATCH,)).to(dev)                       # torch RNG
        noise = np.random.normal(0.0, 0.05, size=(BATCH, FEATURES))            # NumPy RNG
        xb = (X[idx] + torch.from_numpy(noise).float().to(dev)) * random.uniform(0.9, 1.1)  # Python RNG
        with torch.autocast(device_type=dev.type, dtype=torch.float16, enabled=dev.type == "cuda"):
            loss = F.cross_entropy(model(xb), y[idx])                           # dropout: torch RNG
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        scheduler.step()
        step += 1
    path = save_checkpoint(training_state(model, optimizer, scheduler, scaler, step), folder, step, keep=keep)
    return {"start": start, "step": step, "checkpoint": str(path), "loss": loss.item(), "model": model}


class StallingWriter:
    """Wraps a binary file: after ``after`` bytes it flushes them to disk, creates ``ready`` and
    sleeps, so the parent can kill this process in the middle of a save."""

    def __init__(self, f: BinaryIO, ready: Path, after: int) -> None:
        self.f, self.ready, self.after, self.written = f, ready, after, 0

    def write(self, data: Any) -> int:
        n = self.f.write(data)
        self.written += len(memoryview(data).cast("B"))
        if self.written >= self.after:
            self.f.flush()
            os.fsync(self.f.fileno())
            self.ready.write_text(str(self.written))
            time.sleep(600)  # the parent kills us here
        return n

    def flush(self) -> None:
        self.f.flush()


def stall_save(target: Path, ready: Path, naive: bool, chunks: int = 8, chunk_mib: int = 1) -> None:
    """Start saving a ``chunks`` x ``chunk_mib`` MiB checkpoint to ``target`` and stall after the first MiB."""
    big = {f"layer{i}.weight": torch.randn(chunk_mib * 2**18) for i in range(chunks)}  # 2**18 float32 = 1 MiB
    wrap = lambda f: StallingWriter(f, ready, after=2**20)  # noqa: E731
    if naive:
        with open(target, "wb") as f:  # truncates the old checkpoint at once
            torch.save(big, wrap(f))
    else:
        atomic_save(big, target, wrap=wrap)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train", help="train to --until, from scratch or --resume from --folder")
    t.add_argument("--folder", type=Path, required=True)
    t.add_argument("--until", type=int, required=True)
    t.add_argument("--total", type=int, required=True, help="length of the LR schedule (same in every process)")
    t.add_argument("--resume", action="store_true")
    t.add_argument("--no-rng", action="store_true", help="resume without restoring the random generators")
    t.add_argument("--device", default="cpu")
    t.add_argument("--threads", type=int, default=0, help="torch threads (0: leave the default)")
    t.add_argument("--keep", type=int, default=3)
    s = sub.add_parser("stall-save", help="start a save, signal through --ready, then stall")
    s.add_argument("--target", type=Path, required=True)
    s.add_argument("--ready", type=Path, required=True)
    s.add_argument("--naive", action="store_true", help="write straight onto the target")
    args = ap.parse_args(argv)
    if args.cmd == "stall-save":
        stall_save(args.target, args.ready, args.naive)
        return 0
    out = train(args.folder, args.until, args.total, device=args.device, resume=args.resume,
                restore_rng=not args.no_rng, keep=args.keep, threads=args.threads)
    out.pop("model")
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
