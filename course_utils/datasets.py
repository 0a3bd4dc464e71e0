"""A dataset whose samples cost real CPU time to produce, like JPEG decoding and augmentation.

It lives here, not in a notebook, because ``DataLoader`` worker processes must be able to
*import* the dataset's class. Under the ``spawn`` start method (the default on macOS and Windows)
and ``forkserver`` (the default on Linux from Python 3.14; notebook 08 uses it wherever it exists)
a worker unpickles the dataset, which works only for classes defined in an importable module,
never for classes defined in a notebook.
"""
from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import Dataset


class SyntheticImages(Dataset):
    """``n`` labelled colour images, each built from scratch on every ``__getitem__`` call.

    Per sample: draw a label, "decode" (upsample the class's low-resolution pattern, add noise,
    then ``work`` passes of a 3x3 blur: the tunable CPU cost, linear in ``work``), "augment"
    (random crop from a 4-pixel padding and a random horizontal flip), normalise. The label and
    the decoded image come from a generator seeded with ``(seed, index)``: the same picture every
    epoch. The augmentation comes from one seeded with ``(seed, epoch, index)``: new crops and
    flips every epoch (call :meth:`set_epoch` at the start of each, as with
    ``DistributedSampler``), yet the same in every process and worker layout for a given epoch.
    Returns ``(float32 tensor (channels, size, size), int label)``. NumPy does the work,
    single-threaded, as image decoders do.

    Used by: notebook 08 (and its DataLoader workers).
    """

    def __init__(self, n: int = 1024, *, size: int = 64, channels: int = 3, classes: int = 10,
                 work: int = 8, seed: int = 0) -> None:
        for name, value, lo in (("n", n, 1), ("size", size, 8), ("channels", channels, 1),
                                ("classes", classes, 2), ("work", work, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < lo:
                raise ValueError(f"{name} must be an integer >= {lo}, got {value!r}")
        if size % 4:
            raise ValueError(f"size must be a multiple of 4, got {size}")
        self.n, self.size, self.channels, self.classes, self.work, self.seed = n, size, channels, classes, work, seed
        self.epoch = 0
        rng = np.random.default_rng([seed, 2**31])  # the class patterns: shared by all samples
        self.patterns = rng.standard_normal((classes, channels, size // 4, size // 4)).astype(np.float32)

    def __len__(self) -> int:
        return self.n

    def set_epoch(self, epoch: int) -> None:
        """Draw the augmentation of epoch ``epoch`` from now on (without it every epoch sees the same crops).

        DataLoader workers receive a copy of the dataset when an iterator starts them, so call this
        before ``iter(loader)``. Persistent workers (``persistent_workers=True``) keep the copy they
        started with and never see a later call: put per-epoch randomness in a sampler there.
        """
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
            raise ValueError(f"epoch must be an integer >= 0, got {epoch!r}")
        self.epoch = epoch

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        if not -self.n <= index < self.n:
            raise IndexError(f"index {index} out of range for {self.n} samples")
        index %= self.n
        rng = np.random.default_rng([self.seed, index])              # the picture: every epoch the same
        aug = np.random.default_rng([self.seed, self.epoch, index])  # the augmentation: new every epoch
        label = int(rng.integers(self.classes))
        # "decode": a 4x upsampled class pattern plus noise, smoothed `work` times
        img = np.kron(self.patterns[label], np.ones((4, 4), np.float32))
        img += rng.standard_normal(img.shape, dtype=np.float32)
        for _ in range(self.work):
            img = _blur3x3(img)
        # "augment": random 4-pixel translation (pad, crop) and horizontal flip
        padded = np.pad(img, ((0, 0), (4, 4), (4, 4)), mode="reflect")
        dy, dx = aug.integers(0, 9, size=2)
        img = padded[:, dy:dy + self.size, dx:dx + self.size]
        if aug.random() < 0.5:
            img = img[:, :, ::-1]
        img = (img - img.mean()) / (img.std() + 1e-6)
        return torch.from_numpy(np.ascontiguousarray(img, dtype=np.float32)), label

    def __repr__(self) -> str:
        return (f"SyntheticImages(n={self.n}, size={self.size}, channels={self.channels}, "
                f"classes={self.classes}, work={self.work}, seed={self.seed}, epoch={self.epoch})")


def _blur3x3(img: np.ndarray) -> np.ndarray:
    """Mean over each pixel's 3x3 neighbourhood (edges repeat), per channel."""
    p = np.pad(img, ((0, 0), (1, 1), (1, 1)), mode="edge")
    h, w = img.shape[1:]
    out = np.zeros_like(img)
    for dy in range(3):
        for dx in range(3):
            out += p[:, dy:dy + h, dx:dx + w]
    return out * np.float32(1 / 9)
