"""Iris, prepared the way the source lesson does it (no download: scikit-learn ships the data)."""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class IrisSplit:
    """Train/test tensors plus the names needed to label plots."""

    X_train: torch.Tensor  # float32 (n_train, 4), MinMax-scaled with the training set's min/max
    X_test: torch.Tensor
    y_train: torch.Tensor  # int64 class indices 0..2
    y_test: torch.Tensor
    feature_names: list[str]
    class_names: list[str]

    def to(self, device: torch.device | str) -> "IrisSplit":
        """A copy with every tensor on ``device`` (tensors are copied, not moved in place)."""
        t = {k: getattr(self, k).to(device) for k in ("X_train", "X_test", "y_train", "y_test")}
        return IrisSplit(**t, feature_names=self.feature_names, class_names=self.class_names)


def load_iris(device: torch.device | str = "cpu", *, test_size: float = 0.2, seed: int = 42) -> IrisSplit:
    """Iris as tensors on ``device``: an 80/20 split with a fixed seed, scaled to [0, 1] by a
    MinMaxScaler fitted on the training part only (so no test information leaks into training).

    Used by: notebooks 02, 03, 06.
    """
    if not 0.0 < test_size < 1.0:
        raise ValueError(f"test_size must be between 0 and 1, got {test_size}")
    from sklearn.datasets import load_iris as sk_load_iris
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import MinMaxScaler

    iris = sk_load_iris()
    X_tr, X_te, y_tr, y_te = train_test_split(iris.data, iris.target, test_size=test_size, random_state=seed)
    scaler = MinMaxScaler().fit(X_tr)
    split = IrisSplit(
        X_train=torch.tensor(scaler.transform(X_tr), dtype=torch.float32),
        X_test=torch.tensor(scaler.transform(X_te), dtype=torch.float32),
        y_train=torch.tensor(y_tr, dtype=torch.long),
        y_test=torch.tensor(y_te, dtype=torch.long),
        feature_names=list(iris.feature_names),
        class_names=[str(n) for n in iris.target_names],
    )
    return split.to(device)
