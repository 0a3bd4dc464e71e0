"""Kept so that ``from course_utils.memory import track_peak`` (lessons 06, 07 and 08) still works.

The module was split in two: the allocation tracker is :mod:`course_utils.memtrack`, the planner
(measure, estimate, formula) is :mod:`course_utils.memplan`. New code imports from those.
"""
from __future__ import annotations

from .memtrack import PeakTracker, track_peak

__all__ = ["PeakTracker", "track_peak"]
