"""A writer that dies in the middle of a save, every time: notebook 07's crash demo, as its own process.

    python -m course_utils.stall_save --target FILE --ready FILE [--naive]

It starts saving a ~8 MiB checkpoint to ``--target``; after the first MiB it flushes, creates the
``--ready`` file and sleeps, so the parent can kill it (SIGKILL: no cleanup code runs, as in a real
crash) at a known point in the middle of the write. With ``--naive`` it writes straight onto the
target (``open(target, "wb")`` empties the old checkpoint at once), otherwise through
:func:`course_utils.checkpoint.atomic_save`. (The lesson's training script, the other program of
part 2, is written by the notebook itself with ``%%writefile``.)
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any, BinaryIO

import torch

from .checkpoint import atomic_save


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
    ap.add_argument("--target", type=Path, required=True)
    ap.add_argument("--ready", type=Path, required=True, help="created when the save is half-way")
    ap.add_argument("--naive", action="store_true", help="write straight onto the target")
    args = ap.parse_args(argv)
    stall_save(args.target, args.ready, args.naive)
    return 0


if __name__ == "__main__":
    sys.exit(main())
