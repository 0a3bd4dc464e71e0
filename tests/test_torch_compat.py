"""course_utils.torch_compat: the torch-2.4-only filter hides torch's own checkpoint warning and nothing else."""
from __future__ import annotations

import warnings

import torch

from course_utils import torch_compat

MESSAGE = "`torch.cpu.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cpu', args...)` instead."


def _shown(message: str, module: str) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        added = torch_compat.quiet_internal_deprecations()
        warnings.warn_explicit(message, FutureWarning, "checkpoint.py", 1399, module=module)
    return added, [str(w.message) for w in caught]


def test_filter_on_torch_2_4_hides_only_that_warning(monkeypatch):
    monkeypatch.setattr(torch, "__version__", "2.4.1+cu121")
    assert torch_compat.torch_version() == (2, 4)
    assert _shown(MESSAGE, "torch.utils.checkpoint") == (True, [])
    assert _shown(MESSAGE, "my_module")[1] == [MESSAGE]  # the same text from elsewhere still shows
    assert _shown("something else is deprecated", "torch.utils.checkpoint")[1] == ["something else is deprecated"]


def test_no_filter_on_newer_torch(monkeypatch):
    monkeypatch.setattr(torch, "__version__", "2.11.0")
    assert _shown(MESSAGE, "torch.utils.checkpoint") == (False, [MESSAGE])
