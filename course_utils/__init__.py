"""Plumbing for the course notebooks: devices, timing, data, plots, the results ledger.

Lessons import what they need by module, e.g. ``from course_utils.timing import benchmark``;
the most used names are re-exported here.
"""
from .device import DeviceUnavailableError, environment_report, pick_device, synchronize
from .ledger import compare, record, save_card
from .notebook import setup_notebook
from .params import ParameterError
from .repro import seed_everything
from .timing import Timing, benchmark
from .torch_compat import quiet_internal_deprecations

quiet_internal_deprecations()  # torch 2.4 only: a FutureWarning from inside torch.utils.checkpoint

__version__ = "0.1.0"

__all__ = [
    "DeviceUnavailableError",
    "ParameterError",
    "Timing",
    "benchmark",
    "compare",
    "environment_report",
    "pick_device",
    "record",
    "save_card",
    "seed_everything",
    "setup_notebook",
    "synchronize",
]
