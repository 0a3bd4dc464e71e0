"""course_utils.memtrack: the allocation tracker against hand-computed allocations, and the
profiler measurement that sees what the tracker cannot (kernel scratch memory)."""
from __future__ import annotations

import torch
from torch import nn

from course_utils.memtrack import profiler_peak, storage_bytes, track_peak

MiB = 2**20

# ------------------------------------------------------------------ track_peak, against known allocations


def test_one_mebibyte_allocated_and_freed():
    with track_peak("cpu") as t:
        a = torch.empty(MiB // 4)  # float32: 1 MiB
        del a
    assert t.peak_bytes == MiB and t.end_bytes == 0


def test_chain_of_ops_and_views_count_each_storage_once():
    with track_peak("cpu") as t:
        a = torch.ones(MiB // 4)
        b = a * 2  # +1 MiB
        v1, v2 = b.view(-1), b[::2]  # views: no new memory
        del a  # -1 MiB
        c = b + 1  # +1 MiB -> 2 MiB again
        del b, v1, v2
    assert t.peak_bytes == 2 * MiB
    assert t.end_bytes == MiB  # c is still alive
    del c


def test_tensors_from_before_the_block_are_not_counted():
    outer = torch.ones(MiB // 4)
    with track_peak("cpu") as t:
        outer.mul_(2)  # in place: no new memory
        view = outer[:10]
        del outer  # freeing something allocated before the block does not go below zero
    assert t.peak_bytes == 0 and t.end_bytes == 0
    del view


def test_linear_training_step_matches_hand_computed_bytes():
    torch.manual_seed(0)
    batch, fin, fout = 64, 1024, 512
    lin, x = nn.Linear(fin, fout), torch.randn(batch, fin)
    weights = fin * fout * 4
    params = weights + fout * 4
    with track_peak("cpu") as fwd:
        y = lin(x)
    assert fwd.peak_bytes == fwd.end_bytes == batch * fout * 4
    with track_peak("cpu") as bwd:
        y.pow(2).mean().backward()
    assert bwd.end_bytes == params  # the gradients: one per parameter, same size
    assert bwd.peak_bytes >= params
    opt = torch.optim.AdamW(lin.parameters(), foreach=False)
    with track_peak("cpu") as step:
        opt.step()
    # AdamW's first step creates two fp32 moments per parameter and a 4-byte step counter per tensor.
    assert step.end_bytes == 2 * params + 2 * 4
    # ... and briefly holds temporaries of one weight's size while computing its update.
    assert 2 * params < step.peak_bytes <= 2 * params + 8 + 2 * weights


def test_profiler_sees_memory_the_tracker_cannot():
    """A kernel's internal scratch buffer (im2col, workspaces) is no operator output: only the
    allocator-level measurement sees it."""
    x, a = torch.randn(64, 3, 64, 64), torch.randn(256, 512)
    conv = nn.Conv2d(3, 64, 7, padding=3)
    seen = []
    for fn in (lambda: conv(x), lambda: torch.cdist(a, a)):
        with track_peak("cpu") as t:
            out = fn()
        del out
        seen.append((profiler_peak(fn), t.peak_bytes))
    assert all(prof >= tracked > 0 for prof, tracked in seen)
    assert any(prof > tracked for prof, tracked in seen), seen


def test_storage_bytes_counts_shared_storage_once_and_rounds():
    w = torch.empty(100)  # 400 bytes
    assert storage_bytes([w, w.view(10, 10), w[:5]]) == 400
    assert storage_bytes([w, torch.empty(1)], round_to=512) == 1024
