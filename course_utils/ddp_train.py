"""Data-parallel training with DistributedDataParallel (DDP): the script notebook 09 launches.

Every process runs this whole file. torchrun starts them and tells each one who it is through
environment variables (RANK, LOCAL_RANK, WORLD_SIZE, ...). Run it yourself from the repository root:

    torchrun --nproc-per-node=2 -m course_utils.ddp_train --out build/scratch/ddp_demo

The same file runs on CPUs (backend gloo) and on NVIDIA GPUs (backend NCCL, one process per GPU,
process LOCAL_RANK uses GPU LOCAL_RANK); ``--device auto`` picks CUDA when it is there.
Tasks (``--tasks``): ``env`` prints what torchrun set, ``train`` trains a small classifier and checks
after every step that all ranks hold the same weights, ``tiny`` shows how a dataset smaller than the
number of ranks is shared out, ``bench`` measures throughput with and without gradient communication.
Used by: notebook 09 and tests/test_ddp.py.
"""
from __future__ import annotations

import argparse
import datetime
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
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from course_utils.checkpoint import atomic_save

ENV_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT")


def log(message: str, every_rank: bool = False) -> None:
    """Print one whole line, from rank 0 only unless ``every_rank``. One write per line keeps the
    lines of different processes from being mixed inside a line."""
    rank = int(os.environ.get("RANK", 0))
    if every_rank or rank == 0:
        sys.stdout.write(f"[rank {rank}] {message}\n")
        sys.stdout.flush()


def setup(device_choice: str, timeout_s: float) -> torch.device:
    """Join the process group: NCCL and this process's own GPU, or gloo on the CPU."""
    use_cuda = device_choice == "cuda" or (device_choice == "auto" and torch.cuda.is_available())
    if use_cuda:
        visible, local_rank = torch.cuda.device_count(), int(os.environ["LOCAL_RANK"])
        if local_rank >= visible:  # say so, instead of "invalid device ordinal" from every extra rank
            raise RuntimeError(f"LOCAL_RANK {local_rank} needs GPU {local_rank}, but this node shows {visible} "
                               f"GPU(s): start at most {visible} process(es) per node with NCCL")
        device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))  # one GPU per process
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=timeout_s), device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=timeout_s))
    return device


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
    the weights per call, as much traffic as the gradient average itself. This lesson calls it after
    every step to prove the ranks stay identical; a real training loop leaves it out."""
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    high, low = flat.clone(), flat.clone()
    dist.all_reduce(high, op=dist.ReduceOp.MAX)
    dist.all_reduce(low, op=dist.ReduceOp.MIN)
    return (high - low).max().item()


def save_checkpoint(path: Path, model: nn.Module, optimizer: torch.optim.Optimizer, epoch: int) -> None:
    """Rank 0 writes, atomically; every rank waits at the barrier until the file is complete.

    No RNG state is saved, and none is needed here: nothing random happens after the model is built
    (no dropout, no augmentation), the model's random init is overwritten by the loaded weights, and
    the data order comes from ``DistributedSampler(seed=0)`` + ``set_epoch``, not from an RNG state.
    A model with dropout or random augmentation must also save, per rank (each rank has its own
    stream), ``torch.get_rng_state()`` and ``torch.cuda.get_rng_state()`` to resume exactly."""
    if dist.get_rank() == 0:
        # temporary file + fsync + os.replace: a reader sees the old file or the new one, never half
        atomic_save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, path)
    dist.barrier()


def accumulate(ddp: DDP, x: torch.Tensor, y: torch.Tensor, micro: int) -> torch.Tensor:
    """Forward and backward ``x`` in ``micro`` equal micro-batches, summing their gradients; only the
    last backward all-reduces (the others run inside ``no_sync()``, forward included, as DDP requires).
    Each loss is divided by ``micro`` so the sum is the gradient of the whole batch's mean loss.
    Returns that mean loss (detached)."""
    total = torch.zeros((), device=x.device)
    for i, (xs, ys) in enumerate(zip(x.chunk(micro), y.chunk(micro))):
        with ddp.no_sync() if i < micro - 1 else nullcontext():
            loss = F.cross_entropy(ddp(xs), ys) / micro
            loss.backward()
        total += loss.detach()
    return total


def train(args: argparse.Namespace, device: torch.device) -> dict:
    """Train, check that the ranks agree after every step, checkpoint every epoch, save the result."""
    rank, world = dist.get_rank(), dist.get_world_size()
    data = make_data(args.samples)
    sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=args.batch, sampler=sampler)

    torch.manual_seed(0)  # same start on every rank (DDP also copies rank 0's weights to all)
    model = make_model(16, args.width, 4).to(device)
    checkpoint = Path(args.checkpoint) if args.checkpoint else None
    state, first_epoch = None, 0
    if args.resume and checkpoint and checkpoint.exists():
        state = torch.load(checkpoint, map_location=device, weights_only=True)  # every rank loads
        model.load_state_dict(state["model"])
        first_epoch = state["epoch"] + 1
        log(f"resumed from {checkpoint.name}: epoch {state['epoch']} was complete")
    ddp = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    if state is not None:
        optimizer.load_state_dict(state["optimizer"])

    step, worst_spread = first_epoch * len(loader), 0.0
    batches = torch.zeros(world, device=device)
    for epoch in range(first_epoch, args.epochs):
        sampler.set_epoch(epoch)  # a new shuffle each epoch, the same one on every rank
        totals = torch.zeros(2, device=device)  # loss sum, sample count
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad(set_to_none=True)
            step += 1
            if step == args.crash_at and rank == args.crash_rank:
                raise RuntimeError(f"simulated failure on rank {rank} at step {step}")
            loss = accumulate(ddp, x, y, args.accum)  # DDP averages the gradients over all ranks here
            optimizer.step()
            worst_spread = max(worst_spread, spread_across_ranks(model))
            totals += torch.stack([loss.detach() * len(y), torch.tensor(float(len(y)), device=device)])
            batches[rank] += 1
        dist.all_reduce(totals)  # every rank's share, so rank 0 can log the global mean
        log(f"epoch {epoch}: mean loss {(totals[0] / totals[1]).item():.4f} over {int(totals[1])} samples, "
            f"step {step}, ranks differ by at most {worst_spread:.1e}")
        if checkpoint:
            save_checkpoint(checkpoint, model, optimizer, epoch)
    dist.all_reduce(batches)
    summary = {"world_size": world, "steps": step, "max_rank_spread": worst_spread,
               "batches_per_rank": batches.tolist(), "backend": dist.get_backend(), "first_epoch": first_epoch}
    if rank == 0 and args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        torch.save({k: v.cpu() for k, v in model.state_dict().items()}, out / "weights.pt")
        (out / "train.json").write_text(json.dumps(summary, indent=1))
    return summary


def tiny(rank: int, world: int) -> None:
    """A dataset smaller than the number of ranks: every rank still gets the same number of samples."""
    for n in (1, 3):
        for drop_last in (False, True):
            sampler = DistributedSampler(range(n), num_replicas=world, rank=rank, shuffle=False, drop_last=drop_last)
            log(f"tiny dataset of {n}, drop_last={drop_last}: my indices {list(sampler)}", every_rank=True)


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
    thread count in ``--bench-threads``; rank 0 writes the medians to bench.json."""
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
                        "grad_mb": sum(p.numel() for p in model.parameters()) * 4 / 2**20, "buckets": layout})
        log(f"bench: {world} x {args.bench_batch} samples per step, {threads} thread(s) per process: "
            f"{t * 1e3:.1f} ms/step ({t_compute * 1e3:.1f} ms without all-reduce), "
            f"{results[-1]['samples_per_s']:.0f} samples/s")
    if dist.get_rank() == 0 and args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "bench.json").write_text(json.dumps(results, indent=1))
    return results


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="DDP training demo (launch with torchrun)")
    ap.add_argument("--tasks", default="env,train", help="comma-separated: env, train, tiny, bench")
    ap.add_argument("--out", default="", help="folder for rank 0's results (weights.pt, train.json, bench.json)")
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--samples", type=int, default=512, help="training set size")
    ap.add_argument("--batch", type=int, default=16, help="batch size PER RANK")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--width", type=int, default=32, help="hidden units of the trained MLP")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--accum", type=int, default=1, help="micro-batches per step (gradient accumulation, no_sync)")
    ap.add_argument("--checkpoint", default="", help="checkpoint file, written by rank 0 after every epoch")
    ap.add_argument("--resume", action="store_true", help="continue from --checkpoint if it exists")
    ap.add_argument("--crash-at", type=int, default=0, help="raise at this global step (fault demo)")
    ap.add_argument("--crash-rank", type=int, default=1, help="the rank that raises")
    ap.add_argument("--bench-width", type=int, default=1024)
    ap.add_argument("--bench-batch", type=int, default=64, help="batch size per rank in the benchmark")
    ap.add_argument("--bench-seconds", type=float, default=0.2, help="length of one timed block")
    ap.add_argument("--bench-threads", default="", help="e.g. 1,2: time with each thread count (default: as set)")
    ap.add_argument("--bench-repeats", type=int, default=3, help="timed blocks (the median is kept)")
    ap.add_argument("--timeout", type=float, default=60, help="seconds a collective may wait before failing")
    return ap.parse_args(argv)


@record  # on failure, torchrun's report shows this process's exception and traceback
def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    if args.accum < 1 or args.batch % args.accum:
        raise SystemExit(f"--accum {args.accum} must be >= 1 and divide --batch {args.batch}")
    device = setup(args.device, args.timeout)
    rank, world = dist.get_rank(), dist.get_world_size()
    tasks = args.tasks.split(",")
    if "env" in tasks:
        env = " ".join(f"{k}={os.environ.get(k)}" for k in ENV_VARS)
        log(f"{env} pid={os.getpid()} device={device} backend={dist.get_backend()}", every_rank=True)
    if "tiny" in tasks:
        tiny(rank, world)
    if "train" in tasks:
        train(args, device)
    if "bench" in tasks:
        bench(args, device)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
    # Leave without interpreter finalisation: with torch 2.13 + gloo, a worker that exits normally
    # after destroy_process_group() sometimes aborts during it ("terminate called without an active
    # exception", SIGABRT; seen here in about 1 run of 10 on a busy 2-core machine), which would fail a
    # job whose work is complete. Everything is written and flushed by now.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
