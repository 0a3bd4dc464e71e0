"""Seeding, so that everything except timings is the same on every run (nbval compares it)."""
from __future__ import annotations

import random

import numpy as np
import torch


def seed_everything(seed: int = 0) -> None:
    """Seed Python's, NumPy's and PyTorch's generators (all devices). Used by: every notebook."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds CUDA and MPS generators
