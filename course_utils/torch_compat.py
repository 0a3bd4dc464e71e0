"""Differences between the torch releases the course runs on (2.4 to the newest), handled in one place.

- torch 2.4's ``torch.utils.checkpoint`` recomputes (reentrant and non-reentrant alike) under
  ``torch.cpu.amp.autocast(...)``, which 2.4 itself deprecated: every checkpointed backward prints a
  FutureWarning that no caller can act on. torch 2.8 calls ``torch.amp.autocast("cpu", ...)`` there
  (docs/compat.md: 2.8, 2.11 and 2.14 printed no such warning; 2.5-2.7 were not run).
  :func:`quiet_internal_deprecations` ignores exactly that warning, raised from exactly that module, on
  releases before 2.5; every other warning still shows.
Used by: course_utils/__init__.py, on import (so in every lesson; lessons 05 and 07 checkpoint).
"""
from __future__ import annotations

import warnings

import torch


def torch_version() -> tuple[int, int]:
    """(major, minor) of the running torch, e.g. (2, 4) for '2.4.1+cu121'."""
    major, minor = torch.__version__.split("+")[0].split(".")[:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)


def quiet_internal_deprecations() -> bool:
    """Ignore torch 2.4's own deprecated call inside torch.utils.checkpoint; True when a filter was added."""
    if torch_version() >= (2, 5):
        return False
    warnings.filterwarnings("ignore", message=r"`torch\.cpu\.amp\.autocast\(args\.\.\.\)` is deprecated",
                            category=FutureWarning, module=r"torch\.utils\.checkpoint")
    return True
