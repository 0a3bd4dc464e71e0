"""Lesson 11's helpers (course_utils.sharding, memplan.zero_bytes_per_rank) and its training script
(course_utils.fsdp_train, which the core and the deeper notebook launch and print) in this process,
and the script launched for real with torchrun (gloo, CPU processes) with the bad input the lesson
never gives it. (That every variant equals one process, that checkpoints reshard 2 -> 1 and 1 -> 2,
that an interrupted save leaves the previous checkpoint and that a run over its budget fails clearly,
the lesson's own cells launch and assert in its runs in tests/test_standalone.py.)"""
from __future__ import annotations

import importlib
from pathlib import Path

import nbformat
import pytest
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch import nn

from course_utils import launch as L
from course_utils.memplan import zero_bytes_per_rank
from course_utils.sharding import (check_compatible, commit, complete_checkpoints, full_value, global_batch,
                                   held_bytes, init_weights_, make_model, my_rows, profile_step, step_dir, tmp_dir)

NOTEBOOKS = [Path(__file__).resolve().parents[1] / "notebooks" / name
             for name in ("11_sharding_fsdp.ipynb", "deeper/11_sharding_fsdp.ipynb")]
SMALL = ["--device", "cpu", "--width", 32, "--layers", 2, "--global-batch", 8, "--steps", 4, "--timeout", 30]
gloo = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs gloo")


@pytest.fixture
def one_rank_group():
    """A one-process gloo group on an in-memory store: no port, nothing left behind."""
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


# ------------------------------------------------------------------ in this process (fast)


def test_zero_formula_is_lesson_05s():
    # The ZeRO paper's figure 1 (lesson 05 asserts the same): 7.5 B parameters, 2 + 2 + 12 bytes, 64 GPUs.
    got = [zero_bytes_per_rank(7.5e9, k, 64, optimizer="adamw", precision="bf16-mixed")["total"] / 1e9 for k in range(4)]
    assert [round(x, 1) for x in got] == [120.0, 31.4, 16.6, 1.9]
    parts = zero_bytes_per_rank(1000, 2, 4, optimizer="adam")
    assert (parts["weights"], parts["gradients"], parts["optimizer_state"]) == (4000, 1000, 2000)
    with pytest.raises(ValueError, match="stage must be 0-3"):
        zero_bytes_per_rank(1000, 4, 2)


def test_init_is_the_same_for_every_world_size_and_batches_split_evenly():
    assert torch.equal(full_value(3, (4, 5)), full_value(3, (4, 5)))
    assert not torch.equal(full_value(3, (4, 5)), full_value(4, (4, 5)))
    with torch.device("meta"):
        model = make_model(8, 2)
    model.to_empty(device="cpu")
    init_weights_(model)
    assert all(torch.equal(p, full_value(i, p.shape)) for i, p in enumerate(model.parameters()))
    x, y = global_batch(0, 8, 4)
    assert torch.equal(torch.cat([my_rows(x, r, 4) for r in range(4)]), x) and y.shape == x.shape
    with pytest.raises(ValueError, match="must be a multiple of the world size"):
        my_rows(x, 0, 3)


def test_held_bytes_of_plain_adam_is_16_bytes_per_parameter():
    model = make_model(16, 1)
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(2, 16)).sum().backward()
    opt.step()
    n = sum(p.numel() for p in model.parameters())
    held = held_bytes(model, opt)
    assert held["params"] == held["grads"] == 4 * n
    assert 8 * n <= held["optimizer"] <= 8 * n + 4 * len(list(model.parameters()))  # + Adam's step counters


@gloo
def test_profile_step_counts_ddp_all_reduce_and_fsdp2_on_one_rank_calls_none(one_rank_group):
    from torch.nn.parallel import DistributedDataParallel as DDP

    from course_utils.sharding import fsdp_api

    ddp = DDP(make_model(32, 1))
    n = sum(p.numel() for p in ddp.parameters())
    with profile_step(1) as prof:
        ddp(torch.randn(4, 32)).sum().backward()
    assert prof.calls.get("all-reduce", 0) >= 1 and prof.backend["all_reduce"]["bytes"] == 4 * n
    assert prof.peak_bytes > 0
    half = DDP(make_model(32, 1).to(torch.bfloat16))  # the bytes follow the tensor's dtype: 2 per element
    with profile_step(1) as prof:
        half(torch.randn(4, 32, dtype=torch.bfloat16)).sum().backward()
    assert prof.backend["all_reduce"]["bytes"] == 2 * n
    fully_shard = fsdp_api()[0]
    model = make_model(32, 1)
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer)
    fully_shard(model)
    with profile_step(1) as prof:
        model(torch.randn(4, 32)).sum().backward()
    assert prof.calls == {} and prof.peak_bytes > 0  # one rank: FSDP2 has nobody to gather from and skips its collectives


@gloo
def test_checkpoint_folders_commit_once_and_refuse_another_model(tmp_path, one_rank_group):
    model = make_model(8, 1)
    state = {"model": model.state_dict()}
    dcp.save(state, checkpoint_id=str(tmp_dir(tmp_path, 2)))
    assert complete_checkpoints(tmp_path) == []  # not committed yet: not a checkpoint
    assert commit(tmp_path, 2) == step_dir(tmp_path, 2)
    assert complete_checkpoints(tmp_path) == [step_dir(tmp_path, 2)]
    dcp.save(state, checkpoint_id=str(tmp_dir(tmp_path, 2)))
    with pytest.raises(FileExistsError, match="not overwriting"):
        commit(tmp_path, 2)
    check_compatible(step_dir(tmp_path, 2), model.state_dict())
    before = sorted((p.name, p.stat().st_size) for p in step_dir(tmp_path, 2).iterdir())
    with pytest.raises(ValueError, match="another model.*shape"):
        check_compatible(step_dir(tmp_path, 2), make_model(16, 1).state_dict())
    with pytest.raises(ValueError, match="another model.*has no"):
        check_compatible(step_dir(tmp_path, 2), make_model(8, 2).state_dict())
    with pytest.raises(FileNotFoundError, match="not a committed DCP checkpoint"):
        check_compatible(tmp_path / "nothing", model.state_dict())
    assert sorted((p.name, p.stat().st_size) for p in step_dir(tmp_path, 2).iterdir()) == before


def _script_args(*extra):
    from course_utils.fsdp_train import parser

    return parser.parse_args([*map(str, SMALL), *map(str, extra)])


@gloo
@pytest.mark.parametrize("mode", ["zero2", "zero3", "zero3_bf16", "zero3_offload"])
def test_fully_shard_gets_the_runs_own_mesh_never_its_default(mode, monkeypatch, one_rank_group):
    # Finding 11-1: without mesh=, fully_shard builds a mesh on the machine's accelerator (a CUDA GPU
    # whenever one is visible), so a gloo run on the CPU got a CUDA mesh and every rank failed. Here the
    # default mesh raises, so a fully_shard call without the run's mesh fails on a CPU-only machine too.
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp._fully_shard import _fully_shard as impl

    from course_utils.fsdp_train import build, train_step

    def default_mesh(*args, **kwargs):
        raise AssertionError("fully_shard fell back to its default mesh (the accelerator's), not the run's")

    for name in ("_init_default_mesh", "_init_default_fully_shard_mesh"):  # the name changed across releases
        if hasattr(impl, name):
            monkeypatch.setattr(impl, name, default_mesh)
    device = torch.device("cpu")
    mesh = init_device_mesh(device.type, (1,))
    model, opt = build(mode, _script_args(), device, mesh)
    assert {p.device_mesh.device_type for p in model.parameters()} == {device.type}
    x, y = global_batch(0, 8, 32)
    loss = train_step(model, opt, x, y)  # the lazy init and one whole step, on the run's mesh
    assert torch.isfinite(loss)


@gloo
def test_bf16_policy_gives_the_loss_fp32_outputs(one_rank_group):
    # Bug: with param_dtype=bf16 and no output_dtype the model's output was bf16 and the target fp32;
    # mse_loss's backward then raised "Found dtype Float but expected BFloat16" (torch 2.11's CPU kernel).
    from torch.distributed.device_mesh import init_device_mesh

    from course_utils.fsdp_train import build

    model, opt = build("zero3_bf16", _script_args(), torch.device("cpu"), init_device_mesh("cpu", (1,)))
    x, y = global_batch(0, 8, 32)
    out = model(x)
    assert out.dtype == torch.float32 == y.dtype
    torch.nn.functional.mse_loss(out, y).backward()
    assert all(p.grad is not None and p.grad.dtype == torch.float32 for p in model.parameters())  # fp32 shards


@pytest.mark.parametrize("version", ["2.4.1", "2.4.1+cu121", "2.5.1", "2.6.0+cu124", "2.7.1", "2.8.0a0+git1234"])
def test_below_the_floor_the_lesson_stops_with_one_line(version):
    from course_utils.sharding import TorchTooOld, fsdp2_floor_problem, require_fsdp2

    line = fsdp2_floor_problem(version)
    assert line.startswith("Lesson 11 needs torch >= 2.9 for FSDP2 on a CPU; this is " + version)
    with pytest.raises(TorchTooOld) as stopped:
        require_fsdp2(version)
    shown = stopped.value._render_traceback_()  # what Jupyter prints: the line, no traceback
    assert shown == [line] and "\n" not in line


@pytest.mark.parametrize("version", ["2.9.0", "2.9.1+cu128", "2.11.0+cu130", "2.13.0+cpu", "3.0.0"])
def test_from_the_floor_up_the_lesson_runs(version):
    from course_utils.sharding import fsdp2_floor_problem, require_fsdp2

    assert fsdp2_floor_problem(version) is None
    require_fsdp2(version)
    require_fsdp2()  # this torch (the course's environment is above the floor)


def test_both_notebooks_check_the_floor_in_their_setup():
    for path in NOTEBOOKS:
        code = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
        setup = next(i for i, src in enumerate(code) if "check_params(" in src)
        assert "require_fsdp2()" in code[setup], f"{path.name}: the setup cell must stop below the floor"


def test_nccl_with_more_ranks_than_gpus_is_refused_before_launch():
    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    with pytest.raises(ValueError, match="no GPU is visible" if visible == 0 else "one per rank"):
        L.torchrun_command("fsdp_train.py", nproc_per_node=visible + 1, backend="nccl", module=False)


# ------------------------------------------------------------------ the lesson's script, real processes


def run(out, *args, nproc=2, timeout=120):
    cmd = L.torchrun_command("course_utils.fsdp_train", [*map(str, SMALL), "--out", str(out), *map(str, args)],
                             nproc_per_node=nproc)
    return L.launch(cmd, timeout=timeout, env=L.child_environment(nproc), echo=False)


# Launched by lesson 11's own cells (core and deeper), at their default size, in their runs in
# tests/test_standalone.py (the same script), each asserted there: every fp32 variant on 1, 2
# and 4 ranks equals one process (mean weight difference < 1e-7, largest < 1e-4, losses < 1e-5); a
# checkpoint saved by 2 ranks resumes on 1, one saved by 1 resumes on 2, and loading writes nothing; a
# rank crashing inside a save leaves the previous checkpoint the only committed one; a run over its
# memory budget fails with "over its budget". Launching them again here (two tests, 52 s of a
# fresh-clone CI run) repeated that work. What the lesson never launches is below.


@pytest.mark.slow
@gloo
def test_a_global_batch_the_ranks_cannot_split_fails_with_a_clear_message(tmp_path):
    with pytest.raises(L.LaunchError) as indivisible:
        run(tmp_path / "i", "--modes", "zero3", "--global-batch", 3, "--ckpt", tmp_path / "ck", "--save-at", 2)
    assert "must be a multiple of the world size 2" in indivisible.value.result.output
    assert complete_checkpoints(tmp_path / "ck") == []


def test_the_figures_draw_measured_bars_solid_and_predicted_ones_hatched():
    import matplotlib

    matplotlib.use("Agg")
    from course_utils.diagrams.lesson11 import bytes_sent_per_step, what_each_rank_holds

    n = 1000
    formula = {m: {"params": 4 * n / w, "grads": 4 * n / g, "optimizer": 8 * n / s}
               for m, (w, g, s) in {"ddp": (1, 1, 1), "zero1": (1, 1, 2), "zero2": (2, 2, 2), "zero3": (2, 2, 2)}.items()}
    measured = {"ddp": formula["ddp"], "zero1": formula["zero1"], "zero2": formula["zero2"], "zero3": None}
    fig = what_each_rank_holds(measured, formula, 2, gathered_zero2=2 * n)
    bars = [p for p in fig.axes[0].patches if p.get_height() > 0]
    assert len(bars) == 4 * 3 + 1  # three parts per stage, and ZeRO-2's gathered weights
    assert [bool(p.get_hatch()) for p in bars[-3:]] == [True, True, True]  # ZeRO-3 not run: predicted
    assert not any(p.get_hatch() for p in bars[:3])  # DDP measured: solid
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert any("predicted" in t for t in texts) and any("during the step" in t for t in texts)
    fig2 = bytes_sent_per_step({"ddp": {"all-reduce": 4 * n}, "zero3": {"all-gather": 8 * n, "all-reduce": 4 * n}}, 4 * n, 2)
    assert [t.get_text() for t in fig2.axes[0].texts] == ["1.00x", "3.00x"]
