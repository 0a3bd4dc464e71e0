"""Self-checking exercises. ``from course_utils.exercises import check`` in a lesson.

Each ``lessonNN.py`` module here registers that lesson's exercises; importing this package
imports them all, so every key is known wherever ``check`` is used.
"""
from __future__ import annotations

import importlib
import pkgutil

from .core import (REGISTRY, Exercise, ExerciseNotPassed, Outcome, Verdict, check, close, evaluate, exercise,
                   is_starter, is_unattempted, number_hint, strict)
from .predict import predict

for _module in pkgutil.iter_modules(__path__):
    if _module.name.startswith("lesson"):
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["REGISTRY", "Exercise", "ExerciseNotPassed", "Outcome", "Verdict", "check", "close", "evaluate",
           "exercise", "is_starter", "is_unattempted", "number_hint", "predict", "strict"]
