"""course_utils.datasets: the CPU-heavy synthetic image dataset of notebook 08."""
from __future__ import annotations

import multiprocessing as mp
import pickle

import pytest
import torch
from torch.utils.data import DataLoader

from course_utils.datasets import SyntheticImages


def test_sample_shape_dtype_label_and_normalisation():
    ds = SyntheticImages(16, size=32, channels=3, classes=5, work=2)
    assert len(ds) == 16
    for i in range(len(ds)):
        x, y = ds[i]
        assert x.shape == (3, 32, 32) and x.dtype == torch.float32 and x.is_contiguous()
        assert isinstance(y, int) and 0 <= y < 5
        assert abs(float(x.mean())) < 1e-4 and abs(float(x.std()) - 1) < 1e-3


def test_deterministic_per_index_and_seed():
    a, b = SyntheticImages(8, work=1), SyntheticImages(8, work=1)
    for i in (0, 3, 7):
        assert torch.equal(a[i][0], b[i][0]) and a[i][1] == b[i][1]
        assert torch.equal(a[i][0], a[i][0])  # no hidden state: the same call twice gives the same sample
    assert not torch.equal(a[0][0], a[1][0])
    other = SyntheticImages(8, work=1, seed=1)
    assert not torch.equal(a[0][0], other[0][0])
    assert torch.equal(a[-1][0], a[7][0])


def test_work_changes_the_image_not_the_label():
    light, heavy = SyntheticImages(4, work=0), SyntheticImages(4, work=5)
    assert [light[i][1] for i in range(4)] == [heavy[i][1] for i in range(4)]
    assert not torch.equal(light[0][0], heavy[0][0])


def test_labels_cover_the_classes():
    ds = SyntheticImages(200, size=8, classes=4, work=0)
    assert {ds[i][1] for i in range(len(ds))} == {0, 1, 2, 3}


@pytest.mark.parametrize("kwargs", [{"n": 0}, {"size": 30}, {"size": 4}, {"classes": 1}, {"work": -1}, {"n": 2.5}, {"work": True}])
def test_bad_arguments_raise(kwargs):
    with pytest.raises(ValueError):
        SyntheticImages(**kwargs)


def test_index_out_of_range_raises_index_error():
    ds = SyntheticImages(3, work=0)
    with pytest.raises(IndexError):
        ds[3]
    with pytest.raises(IndexError):
        ds[-4]


def test_picklable_for_workers():
    ds = SyntheticImages(4, work=1)
    clone = pickle.loads(pickle.dumps(ds))
    assert torch.equal(clone[2][0], ds[2][0]) and repr(clone) == repr(ds)


def test_worker_processes_give_the_same_batches_as_the_main_process():
    """A worker started by forkserver (or spawn) imports the class: the reason it lives in course_utils."""
    method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    ds = SyntheticImages(24, size=16, work=1)
    main = list(DataLoader(ds, batch_size=8))
    loader = DataLoader(ds, batch_size=8, num_workers=2, multiprocessing_context=mp.get_context(method))
    workers = list(loader)
    del loader
    assert len(main) == len(workers) == 3
    for (xa, ya), (xb, yb) in zip(main, workers):
        assert torch.equal(xa, xb) and torch.equal(ya, yb)


def test_set_epoch_changes_the_augmentation_not_the_picture_or_label():
    ds = SyntheticImages(32, size=16, work=0)
    epoch0 = [ds[i] for i in range(32)]
    ds.set_epoch(1)
    epoch1 = [ds[i] for i in range(32)]
    assert [y for _, y in epoch0] == [y for _, y in epoch1], "labels are a property of the sample"
    changed = sum(not torch.equal(a, b) for (a, _), (b, _) in zip(epoch0, epoch1))
    # crop (81 offsets) x flip (2): P(same augmentation) = 1/162 per sample; 32 samples all equal is impossible in practice
    assert changed >= 24, f"only {changed} of 32 samples got a new crop or flip in epoch 1"
    ds.set_epoch(0)
    assert all(torch.equal(ds[i][0], epoch0[i][0]) for i in range(32)), "(epoch, index) repeats exactly"


def test_same_epoch_and_index_repeat_across_instances_and_processes():
    a, b = SyntheticImages(8, work=1), SyntheticImages(8, work=1)
    a.set_epoch(3)
    b.set_epoch(3)
    assert all(torch.equal(a[i][0], b[i][0]) for i in range(8))
    clone = pickle.loads(pickle.dumps(a))
    assert clone.epoch == 3 and torch.equal(clone[5][0], a[5][0])


def test_workers_see_the_epoch_set_before_the_iterator_starts():
    method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    ds = SyntheticImages(16, size=16, work=0)
    ds.set_epoch(2)
    main = list(DataLoader(ds, batch_size=8))
    loader = DataLoader(ds, batch_size=8, num_workers=1, multiprocessing_context=mp.get_context(method))
    workers = list(loader)
    del loader
    assert all(torch.equal(xa, xb) for (xa, _), (xb, _) in zip(main, workers))
    ds.set_epoch(0)
    assert not torch.equal(list(DataLoader(ds, batch_size=8))[0][0], main[0][0])


@pytest.mark.parametrize("epoch", [-1, 1.5, True, "1"])
def test_set_epoch_rejects_bad_values(epoch):
    with pytest.raises(ValueError):
        SyntheticImages(4, work=0).set_epoch(epoch)
