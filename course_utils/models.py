"""The small models the lessons share."""
from __future__ import annotations

import torch
from torch import nn


class IrisMLP(nn.Module):
    """The source lesson's network: 4 inputs -> ``hidden`` ReLU units -> 3 class scores.

    ``hidden`` defaults to the lesson's 10; notebook 02 widens it to find where a GPU wins.
    Used by: notebooks 02, 03, 05, 06.
    """

    def __init__(self, in_features: int = 4, hidden: int = 10, classes: int = 3) -> None:
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.relu(self.fc1(x)))


def count_parameters(model: nn.Module, trainable_only: bool = True) -> int:
    """Number of (trainable) scalar parameters. Used by: notebook 02."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)
