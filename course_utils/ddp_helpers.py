"""What lesson 09's DDP script imports so that the script itself stays about DDP: the toy task,
per-rank logging, a debugging check that the ranks agree, the tiny-dataset demo and the benchmark.

Two scripts import it: the core lesson's short ``ddp_core.py`` and the deeper notebook's full
``ddp_train.py``, both written by ``%%writefile`` cells into the lesson's scratch folder and launched
with torchrun; ``child_environment`` puts the repository on the
workers' ``PYTHONPATH``, so ``from course_utils.ddp_helpers import ...`` works there.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from .i18n import t as tr  # (t is a time in this module)
from torch.utils.data import DistributedSampler, TensorDataset

ENV_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT")


def log(message: str, every_rank: bool = False) -> None:
    """Print one whole line, from rank 0 only unless ``every_rank``. One write per line keeps the
    lines of different processes from being mixed inside a line."""
    rank = int(os.environ.get("RANK", 0))
    if every_rank or rank == 0:
        sys.stdout.write(f"[rank {rank}] {message}\n")
        sys.stdout.flush()


def show_env(device: torch.device) -> None:
    """Every rank prints what torchrun told it, its pid and its device."""
    env = " ".join(f"{k}={os.environ.get(k)}" for k in ENV_VARS)
    log(f"{env} pid={os.getpid()} device={device} backend={dist.get_backend()}", every_rank=True)


def make_data(n: int, features: int = 16, classes: int = 4, seed: int = 0) -> TensorDataset:
    """A deterministic toy task: the class is the largest of ``classes`` fixed projections of x."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=g)
    y = (x @ torch.randn(features, classes, generator=g)).argmax(dim=1)
    return TensorDataset(x, y)


def make_model(features: int, width: int, classes: int, layers: int = 1) -> nn.Sequential:
    """An MLP with ``layers`` hidden layers of ``width`` ReLU units."""
    sizes = [features] + [width] * layers
    blocks: list[nn.Module] = []
    for a, b in zip(sizes, sizes[1:]):
        blocks += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*blocks, nn.Linear(sizes[-1], classes))


def spread_across_ranks(model: nn.Module) -> float:
    """Largest difference of any parameter between any two ranks (0.0 when all ranks agree).

    A debugging check, not part of DDP training: it costs two extra all-reduces (MAX and MIN) of all
    the weights per call, as much traffic as the gradient average itself."""
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    high, low = flat.clone(), flat.clone()
    dist.all_reduce(high, op=dist.ReduceOp.MAX)
    dist.all_reduce(low, op=dist.ReduceOp.MIN)
    return (high - low).max().item()


def tiny(rank: int, world: int) -> None:
    """A dataset smaller than the number of ranks: every rank still gets the same number of samples."""
    for n in (1, 3):
        for drop_last in (False, True):
            sampler = DistributedSampler(range(n), num_replicas=world, rank=rank, shuffle=False, drop_last=drop_last)
            log(f"tiny dataset of {n}, drop_last={drop_last}: my indices {list(sampler)}", every_rank=True)


def add_bench_args(ap: argparse.ArgumentParser) -> None:
    """The benchmark's options, added to the script's parser."""
    ap.add_argument("--bench-width", type=int, default=1024)
    ap.add_argument("--bench-batch", type=int, default=64, help="batch size per rank in the benchmark")
    ap.add_argument("--bench-seconds", type=float, default=0.2, help="length of one timed block")
    ap.add_argument("--bench-threads", default="", help="e.g. 1,2: time with each thread count (default: as set)")
    ap.add_argument("--bench-repeats", type=int, default=3, help="timed blocks (the median is kept)")


def buckets(ddp: DDP) -> dict:
    """DDP's gradient buckets as it reports them (``_get_ddp_logging_data``, a private debugging
    helper): sizes in bytes at construction and after the rebuild that follows the first step (then
    in the order the gradients became ready, last layer first), and the cap."""
    data = ddp._get_ddp_logging_data()

    def sizes(key: str) -> list[int]:  # the sizes come as text, e.g. "4239400, 1052672"
        return [int(v) for v in str(data.get(key, "")).replace(",", " ").split()]

    return {"initial": sizes("bucket_sizes"), "rebuilt": sizes("rebuilt_bucket_sizes"),
            "cap": int(data.get("bucket_cap_bytes", 0)), "first_cap": dist._DEFAULT_FIRST_BUCKET_BYTES}


def sync_all(device: torch.device) -> None:
    """Wait for every rank (a tiny all-reduce) and for this rank's GPU queue: a fair place to read a clock."""
    dist.all_reduce(torch.zeros(1, device=device))
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def bench(args: argparse.Namespace, device: torch.device) -> list[dict]:
    """Time a training step with the gradient all-reduce and without it (``no_sync``), for each
    thread count in ``--bench-threads``; rank 0 writes the medians to ``bench.json`` in ``--out``."""
    world = dist.get_world_size()
    torch.manual_seed(1)
    model = make_model(256, args.bench_width, 10, layers=2).to(device)
    ddp = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    x = torch.randn(args.bench_batch, 256, device=device)
    y = torch.randint(0, 10, (args.bench_batch,), device=device)

    def step(communicate: bool) -> None:
        with nullcontext() if communicate else ddp.no_sync():  # no_sync: skip the all-reduce
            optimizer.zero_grad(set_to_none=True)
            F.cross_entropy(ddp(x), y).backward()
        optimizer.step()

    def seconds_per_step(communicate: bool, steps: int) -> float:
        sync_all(device)
        t0 = time.perf_counter()
        for _ in range(steps):
            step(communicate)
        sync_all(device)  # the job moves at the pace of its slowest rank
        return (time.perf_counter() - t0) / steps

    results = []
    for threads in [int(t) for t in args.bench_threads.split(",")] if args.bench_threads else [torch.get_num_threads()]:
        torch.set_num_threads(threads)
        for _ in range(2):  # warm-up (the first step also rebuilds DDP's buckets)
            step(True)
            step(False)
        layout = buckets(ddp)
        # Every rank must run the same number of steps (or the all-reduces would not pair up):
        # rank 0's choice, from a short trial, is shared with an all-reduce (MAX).
        steps = torch.tensor([args.bench_seconds / seconds_per_step(True, 2)], device=device).clamp(2, 500).ceil()
        dist.all_reduce(steps, op=dist.ReduceOp.MAX)
        with_comm, without = [], []
        for _ in range(args.bench_repeats):  # alternate, so a load spike hits both alike
            with_comm.append(seconds_per_step(True, int(steps.item())))
            without.append(seconds_per_step(False, int(steps.item())))
        t, t_compute = statistics.median(with_comm), statistics.median(without)
        results.append({"world_size": world, "threads": threads, "device": device.type, "step_s": t,
                        "compute_s": t_compute, "samples_per_s": world * args.bench_batch / t,
                        "comm_share": max(0.0, (t - t_compute) / t), "steps": int(steps.item()),
                        "grad_mb": sum(p.numel() for p in model.parameters()) * 4 / 2**20, "buckets": layout,
                        "step_s_repeats": with_comm})  # every repeat, for the spread of a verdict
        log(tr("bench: {world} x {batch} samples per step, {threads} thread(s) per process: {ms:.1f} ms/step "
               "({compute_ms:.1f} ms without all-reduce), {rate:.0f} samples/s", world=world, batch=args.bench_batch,
               threads=threads, ms=t * 1e3, compute_ms=t_compute * 1e3, rate=results[-1]["samples_per_s"]))
    if dist.get_rank() == 0 and args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "bench.json").write_text(json.dumps(results, indent=1))
    return results


def card_scaling(cards: dict[str, dict] | None = None) -> dict[str, dict[int, float]]:
    """Speed-up over one GPU, ``{card: {gpus: speed-up}}``, from every results card that holds NCCL
    throughputs for 1 GPU and at least one more count (lesson 09 draws them beside this run).
    ``cards`` defaults to the shipped results cards (``course_utils.ledger.references``)."""
    from .ledger import _flatten, references

    out = {}
    for name, card in sorted((cards if cards is not None else references()).items()):
        flat = _flatten(card)
        rates = {n: flat[f"ddp.nccl_throughput_{n}gpu"].value for n in (1, 2, 4, 8, 16)
                 if f"ddp.nccl_throughput_{n}gpu" in flat}
        if 1 in rates and len(rates) > 1 and rates[1] > 0:
            out[name] = {n: r / rates[1] for n, r in rates.items()}
    return out
