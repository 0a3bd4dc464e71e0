"""Lesson 11's training script: DDP, ZeRO-1 and FSDP2 (ZeRO-2, ZeRO-3, bf16, offload) side by side.

Every process runs this file, launched by torchrun::

    torchrun --nproc-per-node=2 -m course_utils.fsdp_train --modes ddp,zero3 --out results

It is a file in course_utils (not written by the notebook) because the core lesson and its deeper
notebook launch the same script, and a lesson opened alone has no other file beside it. The
notebooks print the parts they teach (``build``, ``train_step``) with ``inspect.getsource``.
The toy task and the measurements are in course_utils/sharding.py. Used by: notebook 11.
"""
from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn.functional as F
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict, get_state_dict, set_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.elastic.multiprocessing.errors import record
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

from course_utils.checkpoint import atomic_save
from course_utils.sharding import (check_compatible, clear_tmp, commit, complete_checkpoints, fsdp_api, global_batch,
                                   held_bytes, init_weights_, make_model, mean_over_ranks, my_rows, profile_step,
                                   show_shard, tmp_dir, watch)

fully_shard, MixedPrecisionPolicy, CPUOffloadPolicy = fsdp_api()

MODES = ("single", "ddp", "zero1", "zero2", "zero3", "zero3_bf16", "zero3_offload")
parser = argparse.ArgumentParser(description="DDP, ZeRO-1 and FSDP2 side by side (launch with torchrun)")
parser.add_argument("--modes", default="zero3", type=lambda s: s.split(","), help=",".join(MODES))
parser.add_argument("--out", default="", help="folder for rank 0's results")
parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
parser.add_argument("--width", type=int, default=256)
parser.add_argument("--layers", type=int, default=7, help="hidden blocks; the model has layers + 1 Linear")
parser.add_argument("--global-batch", type=int, default=16, help="samples per step, over all ranks")
parser.add_argument("--steps", type=int, default=6)
parser.add_argument("--lr", type=float, default=1e-3)
parser.add_argument("--ckpt", default="", help="folder of step_NNNNNN checkpoints (DCP) of the first mode")
parser.add_argument("--save-at", default="", type=lambda s: [int(v) for v in s.split(",") if v], help="e.g. 2,4")
parser.add_argument("--resume", action="store_true", help="start from the newest complete checkpoint in --ckpt")
parser.add_argument("--crash-in-save", type=int, default=0, help="rank 1 dies in the save of this step")
parser.add_argument("--budget-mb", type=float, default=0, help="fail if a rank's measured peak passes this")
parser.add_argument("--timeout", type=float, default=60)


def setup(args):
    """Join the job: NCCL with this process's own GPU, or gloo on the CPU. Returns the device and a
    1-D mesh of every rank ON THAT DEVICE: fully_shard without a mesh would build its own on the
    machine's accelerator (a CUDA GPU whenever one is visible), even in a gloo run on the CPU."""
    timeout = datetime.timedelta(seconds=args.timeout)
    if args.device == "cuda":
        local_rank, visible = int(os.environ["LOCAL_RANK"]), torch.cuda.device_count()
        if local_rank >= visible:
            raise RuntimeError(f"LOCAL_RANK {local_rank} needs GPU {local_rank}, but this node shows {visible} "
                               f"GPU(s): start at most {visible} process(es) per node with NCCL")
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", timeout=timeout, device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo", timeout=timeout)
    return device, init_device_mesh(device.type, (dist.get_world_size(),))


def build(mode, args, device, mesh):
    """The model on `meta` (shapes, no memory), wrapped for `mode`; then memory for this rank's part only."""
    with torch.device("meta"):
        model = make_model(args.width, args.layers)
    if mode.startswith(("zero2", "zero3")):
        kw = {"mesh": mesh}  # the run's own device and ranks (never fully_shard's default mesh)
        if mode == "zero3_bf16":  # gather and compute in bf16; the loss and the gradient reduction in fp32
            kw["mp_policy"] = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32,
                                                   output_dtype=torch.float32)
        if mode == "zero3_offload":
            kw["offload_policy"] = CPUOffloadPolicy(pin_memory=device.type == "cuda")
        for layer in model:
            if isinstance(layer, torch.nn.Linear):  # one unit per Linear: gathered just before it runs
                fully_shard(layer, reshard_after_forward=mode != "zero2", **kw)  # True: ZeRO-3, False: ZeRO-2
        fully_shard(model, **kw)  # the root unit: FSDP2's default keeps its parameters from forward into backward
    model.to_empty(device="cpu" if mode == "zero3_offload" else device)  # FSDP2: my shards only
    init_weights_(model)  # the same numbers for a whole parameter and for its shards
    if mode in ("ddp", "zero1"):
        model = DDP(model, device_ids=[device.index] if device.type == "cuda" else None, gradient_as_bucket_view=True)
    if mode == "zero1":  # DDP's all-reduce, but each rank keeps (and updates) only its share of Adam's state
        return model, ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam, lr=args.lr)
    return model, torch.optim.Adam(model.parameters(), lr=args.lr)


def save(model, opt, root, step, args):
    """Every rank writes its own shards into a temporary folder; rank 0 renames it into place."""
    model_sd, optim_sd = get_state_dict(model, opt)  # under FSDP2: DTensor shards, nothing gathered
    if dist.get_rank() == 0:
        clear_tmp(root, step)  # what an interrupted save of this step left
    dist.barrier()
    dcp.save({"model": model_sd, "optim": optim_sd, "step": step}, checkpoint_id=str(tmp_dir(root, step)))
    if step == args.crash_in_save and dist.get_rank() == 1:
        raise RuntimeError(f"simulated failure on rank 1 after writing, before committing step {step}")
    dist.barrier()  # every rank's files are complete
    if dist.get_rank() == 0:
        commit(root, step)  # os.replace(.step_N.tmp -> step_N): the previous checkpoint was never touched
    dist.barrier()


def load(model, opt, root):
    """Load the newest committed checkpoint into this rank's shards, whatever world size saved it."""
    found = complete_checkpoints(root)
    if not found:
        return 0
    model_sd, optim_sd = get_state_dict(model, opt)  # the shapes and shards this run wants
    check_compatible(found[-1], model_sd)  # another model's checkpoint: a clear error, nothing loaded
    state = {"model": model_sd, "optim": optim_sd, "step": -1}
    dcp.load(state, checkpoint_id=str(found[-1]))  # each rank reads the pieces its shards need
    set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
    return state["step"]


def train_step(model, opt, x, y):
    """One step, the same code for every mode: the wrappers do the communication inside it."""
    model.zero_grad(set_to_none=False)
    loss = F.mse_loss(model(x), y)  # the mean over my rows; the gradients get averaged over ranks
    loss.backward()  # DDP: all-reduce; FSDP2: reduce-scatter (and all-gathers again, for ZeRO-3)
    opt.step()  # FSDP2 and ZeRO-1: each rank updates its own shard only
    return loss


def train(mode, args, device, mesh):
    rank, world = dist.get_rank(), dist.get_world_size()
    model, opt = build(mode, args, device, mesh)
    checkpointed = args.ckpt and mode == args.modes[0]  # the checkpoints belong to the first mode only
    first = load(model, opt, args.ckpt) if args.resume and checkpointed else 0
    show_shard(model, mode, first)
    losses, times, seen = [], [], {}
    for step in range(first, args.steps):
        x, y = (my_rows(t, rank, world).to(device) for t in global_batch(step, args.global_batch, args.width))
        # The 3rd step is measured: Adam's state exists from the 1st, DDP rebuilds its buckets in the 2nd
        watched = step == first + 2
        held = held_bytes(model, opt) if watched else None
        start = 0
        if watched and device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
            start = torch.cuda.memory_allocated(device)
        dist.barrier()
        t0 = time.perf_counter()
        with profile_step(world) if watched else nullcontext() as prof:
            loss = train_step(model, opt, x, y)
        dist.barrier()
        if step > first + 2:  # the first three steps warm up (the 3rd is profiled): the later ones are timed
            times.append(time.perf_counter() - t0)
        if watched:
            seen = watch(held, prof, device, mode, args.budget_mb, cuda_start=start)
        losses.append(mean_over_ranks(loss))
        if checkpointed and step + 1 in args.save_at:
            save(model, opt, args.ckpt, step + 1, args)
    return finish(model, mode, args, losses, times, seen, first)


def finish(model, mode, args, losses, times, seen, first):
    """Export the full weights (rank 0), gather every rank's measurements, return this mode's results."""
    full = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    if dist.get_rank() == 0 and args.out:  # full_state_dict gathers the shards; cpu_offload: to rank 0's CPU only
        atomic_save(full, Path(args.out) / f"weights_{mode}.pt")
    every = [None] * dist.get_world_size()
    dist.all_gather_object(every, seen)  # each rank's own measurements, to rank 0
    # Every rank runs the same collectives; torch 2.11's profiler now and then misses one rank's backend
    # event, so the step's collectives are the most complete record over the ranks
    collectives = max((r.get("backend", {}) for r in every), key=lambda b: sum(v["count"] for v in b.values()))
    return {"mode": mode, "world": dist.get_world_size(), "params": sum(p.numel() for p in model.parameters()),
            "losses": losses, "first_step": first, "step_s": times, "ranks": every, "backend": dist.get_backend(),
            "collectives": collectives}


@record  # on failure, torchrun's report shows this process's exception
def main():
    args = parser.parse_args()
    device, mesh = setup(args)
    world = dist.get_world_size()
    if args.global_batch % world:
        raise SystemExit(f"--global-batch {args.global_batch} must be a multiple of the world size {world}: "
                         "every rank takes an equal share of each batch")
    if "single" in args.modes and world > 1:
        raise SystemExit("mode 'single' is the one-process reference: launch it with --nproc-per-node=1")
    if args.steps < 3:
        raise SystemExit("--steps must be at least 3: the 3rd step is the one measured")
    results = []
    for mode in args.modes:
        results.append(train(mode, args, device, mesh))
        gc.collect()  # free the finished mode's model before the next one is measured (FSDP2 has reference cycles)
        if device.type == "cuda":
            torch.cuda.empty_cache()
    if dist.get_rank() == 0 and args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "results.json").write_text(json.dumps(results, indent=1))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    # A workaround, not a recipe: this course's CI saw gloo abort now and then while the interpreter shut down
    # (lesson 09, no upstream issue found). os._exit skips that shutdown, and with it atexit handlers and the
    # flushing of open files: everything this script writes is closed (and fsynced) before this line.
    os._exit(0)
